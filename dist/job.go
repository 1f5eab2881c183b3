package dist

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// JobSpec describes a sharded 'pdemu compare' as a Kubernetes Indexed Job.
type JobSpec struct {
	Name  string // the Job's name (made a DNS label); the merge Job is Name-merge
	Image string // container image with pdemu on its PATH
	// Args are pdemu's arguments for one shard (after the program name),
	// e.g. compare SCENARIO... --shard env --out /results; the container
	// gets PDEMU_SHARD_COUNT = Completions beside Kubernetes'
	// JOB_COMPLETION_INDEX.
	Args []string
	// MergeArgs are pdemu's arguments for the merge step, e.g.
	// report /results --out /results/report.html.
	MergeArgs   []string
	Completions int // shards (>= 1)
	Parallelism int // pods at once (<= 0: Completions)
	// BackoffLimitPerIndex is how often a failing index is retried (a
	// failure other than exit 2).
	BackoffLimitPerIndex int
	// ClaimName is the PersistentVolumeClaim mounted at /results in every
	// pod (ReadWriteMany when pods land on several nodes).
	ClaimName string
	CPU       string // CPU request and limit per pod, e.g. "1"
	Memory    string // memory request and limit per pod, e.g. "2Gi"
	// Digest is the plan's digest, recorded as an annotation.
	Digest string
}

// Job builds the Indexed Job and the merge Job.
func Job(s JobSpec) (*batchv1.Job, *batchv1.Job, error) {
	if s.Completions < 1 {
		return nil, nil, fmt.Errorf("dist: completions must be >= 1, got %d", s.Completions)
	}
	if s.Image == "" || s.ClaimName == "" {
		return nil, nil, fmt.Errorf("dist: image and claim name are required")
	}
	par := s.Parallelism
	if par <= 0 || par > s.Completions {
		par = s.Completions
	}
	name := dnsLabel(s.Name, 52) // room for "-merge" and the pod suffixes
	res, err := resources(s.CPU, s.Memory)
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "pdemu", "app.kubernetes.io/component": "compare-shard"}
	ann := map[string]string{}
	if s.Digest != "" {
		ann["pdemu.dev/plan-digest"] = s.Digest
	}
	mode := batchv1.IndexedCompletion
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: ann},
		Spec: batchv1.JobSpec{
			CompletionMode:       &mode,
			Completions:          ptr.To(int32(s.Completions)),
			Parallelism:          ptr.To(int32(par)),
			BackoffLimitPerIndex: ptr.To(int32(s.BackoffLimitPerIndex)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{
					// Bad input: the same arguments fail the same way.
					Action: batchv1.PodFailurePolicyActionFailIndex,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr.To("pdemu"),
						Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
						Values:        []int32{ExitBadInput},
					},
				},
				{
					// An evicted or preempted pod is not the run's fault.
					Action:          batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				},
				// Any other failure counts against BackoffLimitPerIndex.
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       podSpec(s, s.Args, res, []corev1.EnvVar{{Name: "PDEMU_SHARD_COUNT", Value: strconv.Itoa(s.Completions)}}),
			},
		},
	}
	mlabels := map[string]string{"app.kubernetes.io/name": "pdemu", "app.kubernetes.io/component": "compare-merge"}
	merge := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-merge", Labels: mlabels, Annotations: ann},
		Spec: batchv1.JobSpec{
			// Suspended: it starts when resumed after the shards are done.
			Suspend:      ptr.To(true),
			Completions:  ptr.To(int32(1)),
			Parallelism:  ptr.To(int32(1)),
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: mlabels},
				Spec:       podSpec(s, s.MergeArgs, res, nil),
			},
		},
	}
	return job, merge, nil
}

func resources(cpu, mem string) (corev1.ResourceRequirements, error) {
	rl := corev1.ResourceList{}
	for _, r := range []struct {
		name corev1.ResourceName
		v    string
	}{{corev1.ResourceCPU, cpu}, {corev1.ResourceMemory, mem}} {
		if r.v == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.v)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("dist: %s %q: %w", r.name, r.v, err)
		}
		rl[r.name] = q
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}, nil
}

func podSpec(s JobSpec, args []string, res corev1.ResourceRequirements, env []corev1.EnvVar) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, // required by podFailurePolicy
		Containers: []corev1.Container{{
			Name:         "pdemu",
			Image:        s.Image,
			Command:      []string{"pdemu"},
			Args:         args,
			Env:          env,
			Resources:    res,
			VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: ResultsMount}},
		}},
		Volumes: []corev1.Volume{{
			Name:         "results",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.ClaimName}},
		}},
	}
}

// RenderJob renders the Indexed Job, then the merge Job, as one YAML
// stream with the order to apply them in its comments.
func RenderJob(s JobSpec) ([]byte, error) {
	job, merge, err := Job(s)
	if err != nil {
		return nil, err
	}
	return render(
		doc{fmt.Sprintf("pdemu compare as a Kubernetes Indexed Job: %d shards, %d at a time, results on PVC %q at %s.\n"+
			"Apply both documents; the merge Job below starts suspended: resume it once every index has succeeded:\n"+
			"  kubectl apply -f job.yaml\n"+
			"  kubectl wait --for=condition=complete --timeout=24h job/%s &&\n"+
			"    kubectl patch job %s --type=merge -p '{\"spec\":{\"suspend\":false}}'\n"+
			"A pod exiting 2 (bad input) fails its index at once; other failures retry up to %d times per index.",
			s.Completions, *job.Spec.Parallelism, s.ClaimName, ResultsMount, job.Name, merge.Name, s.BackoffLimitPerIndex), job},
		doc{fmt.Sprintf("The merge step: one report of the whole plan from every shard's runs, in plan order;\n"+
			"it exits 2 and names the rows when one is missing, duplicated or of another plan.\n"+
			"Read the report with: kubectl logs job/%s; the files are in %s on the volume.", merge.Name, ResultsMount), merge},
	)
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
