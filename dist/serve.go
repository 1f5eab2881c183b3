package dist

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ServeSpec describes N 'pdemu serve --group I/N' processes as a
// StatefulSet: pod NAME-I serves group I (its ordinal), so every group
// has a stable DNS name NAME-I.NAME for a session-affine gateway.
type ServeSpec struct {
	Name   string // the StatefulSet's and headless Service's name
	Image  string // container image with pdemu on its PATH
	Groups int    // N (>= 1)
	Port   int    // the API port in every pod
	// Args are pdemu's arguments (after the program name) before the
	// group flag; the container appends --group $(ordinal)/N, reading
	// its ordinal from the pod's apps.kubernetes.io/pod-index label.
	Args   []string
	CPU    string
	Memory string
}

// Serve builds the headless Service and the StatefulSet.
func Serve(s ServeSpec) (*corev1.Service, *appsv1.StatefulSet, error) {
	if s.Groups < 1 {
		return nil, nil, fmt.Errorf("dist: groups must be >= 1, got %d", s.Groups)
	}
	if s.Image == "" || s.Port <= 0 {
		return nil, nil, fmt.Errorf("dist: image and port are required")
	}
	name := dnsLabel(s.Name, 52)
	res, err := resources(s.CPU, s.Memory)
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "pdemu", "app.kubernetes.io/component": "serve-group", "app.kubernetes.io/instance": name}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone, // headless: one DNS name per group
			Selector:                 labels,
			PublishNotReadyAddresses: false,
			Ports:                    []corev1.ServicePort{{Name: "http", Port: int32(s.Port), TargetPort: intstr.FromString("http")}},
		},
	}
	args := append(append([]string{}, s.Args...), "--group", fmt.Sprintf("$(POD_INDEX)/%d", s.Groups))
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			ServiceName:         name,
			Replicas:            ptr.To(int32(s.Groups)),
			PodManagementPolicy: appsv1.ParallelPodManagement, // groups are independent
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(60)), // SIGTERM drains, then writes the outputs
					Containers: []corev1.Container{{
						Name:    "pdemu",
						Image:   s.Image,
						Command: []string{"pdemu"},
						Args:    args,
						Env: []corev1.EnvVar{{
							Name: "POD_INDEX",
							ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
								FieldPath: "metadata.labels['apps.kubernetes.io/pod-index']"}},
						}},
						Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: int32(s.Port)}},
						Resources: res,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: ResultsMount}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "results"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: mustQuantity("1Gi")}},
				},
			}},
		},
	}
	return svc, sts, nil
}

// RenderServe renders the headless Service and the StatefulSet.
func RenderServe(s ServeSpec) ([]byte, error) {
	svc, sts, err := Serve(s)
	if err != nil {
		return nil, err
	}
	return render(
		doc{fmt.Sprintf("Headless Service: group I of %d is %s-I.%s:%d; put a session-affine gateway in front\n"+
			"(hash X-Session-Id or the OpenAI \"user\" onto the groups): no message crosses groups.", s.Groups, svc.Name, svc.Name, s.Port), svc},
		doc{fmt.Sprintf("%d pdemu serve groups; pod %s-I serves --group I/%d and writes its outputs to %s on SIGTERM.\n"+
			"Merge them afterwards with: pdemu report GROUP_DIR... --out report.html", s.Groups, sts.Name, s.Groups, ResultsMount), sts},
	)
}
