package dist_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/pdemu/pdemu/dist"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "go test ./dist -update writes it")
	assert.Equal(t, string(want), string(got), "%s changed: check it, then go test ./dist -update", p)
}

// docs splits a YAML stream into its documents.
func docs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		out = append(out, d)
	}
	return out
}

// strict decodes one document into v, refusing any unknown field.
func strict(t *testing.T, doc []byte, v any) {
	t.Helper()
	require.NoError(t, yaml.UnmarshalStrict(doc, v))
}

var jobSpec = dist.JobSpec{
	Name: "pdemu-28d9f93eb4", Image: "registry.example/pdemu:v1",
	Args:        []string{"compare", "1p3d-mlx5", "vanilla-pd-1p3d", "--seeds", "4", "--shard", "env", "--jobs", "1", "-q", "--force", "--out", "/results"},
	MergeArgs:   []string{"report", "/results", "--out", "/results/report.html", "--title", "pdemu compare"},
	Completions: 8, Parallelism: 3, BackoffLimitPerIndex: 2, ClaimName: "pdemu-results",
	CPU: "1", Memory: "2Gi", Digest: "sha256:28d9f93eb467a545b78f49776914fbd887b9112e9f21a753ad403850ed682069",
}

func TestJobDecodesStrictlyIntoBatchV1(t *testing.T) {
	b, err := dist.RenderJob(jobSpec)
	require.NoError(t, err)
	golden(t, "job.yaml.golden", b)
	ds := docs(b)
	require.Len(t, ds, 2)
	var job, merge batchv1.Job
	strict(t, ds[0], &job)
	strict(t, ds[1], &merge)

	assert.Equal(t, "Job", job.Kind)
	assert.Equal(t, "batch/v1", job.APIVersion)
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.EqualValues(t, 8, *job.Spec.Completions)
	assert.EqualValues(t, 3, *job.Spec.Parallelism)
	assert.EqualValues(t, 2, *job.Spec.BackoffLimitPerIndex)
	assert.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy, "podFailurePolicy requires Never")
	rules := job.Spec.PodFailurePolicy.Rules
	require.Len(t, rules, 2)
	assert.Equal(t, batchv1.PodFailurePolicyActionFailIndex, rules[0].Action)
	assert.Equal(t, []int32{2}, rules[0].OnExitCodes.Values, "exit 2 (bad input) fails the index without retry")
	assert.Equal(t, batchv1.PodFailurePolicyOnExitCodesOpIn, rules[0].OnExitCodes.Operator)
	assert.Equal(t, batchv1.PodFailurePolicyActionIgnore, rules[1].Action)

	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "pdemu", *rules[0].OnExitCodes.ContainerName)
	assert.Equal(t, "pdemu", c.Name)
	assert.Equal(t, jobSpec.Args, c.Args)
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "PDEMU_SHARD_COUNT", Value: "8"}, "the count beside JOB_COMPLETION_INDEX")
	assert.Equal(t, dist.ResultsMount, c.VolumeMounts[0].MountPath)
	assert.Equal(t, "pdemu-results", job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "2Gi", c.Resources.Limits.Memory().String())

	assert.Equal(t, "pdemu-28d9f93eb4-merge", merge.Name)
	assert.Nil(t, merge.Spec.CompletionMode)
	assert.True(t, *merge.Spec.Suspend, "the merge waits to be resumed after the shards")
	assert.Equal(t, jobSpec.MergeArgs, merge.Spec.Template.Spec.Containers[0].Args)
	assert.Equal(t, "pdemu-results", merge.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)

	// The rules the API server applies to these fields.
	for _, j := range []*batchv1.Job{&job, &merge} {
		assert.Empty(t, validation.IsDNS1123Label(j.Name), j.Name)
		for k, v := range j.Labels {
			assert.Empty(t, validation.IsQualifiedName(k), k)
			assert.Empty(t, validation.IsValidLabelValue(v), v)
		}
		assert.Equal(t, j.Labels, j.Spec.Template.Labels)
	}
	assert.Empty(t, validation.IsQualifiedName("pdemu.dev/plan-digest"))
	assert.LessOrEqual(t, *job.Spec.Parallelism, *job.Spec.Completions)
	assert.NotNil(t, job.Spec.BackoffLimitPerIndex, "FailIndex needs backoffLimitPerIndex")

	// A field the API does not know fails the strict decode: the test
	// would catch a hand-written manifest drifting from the types.
	var bad batchv1.Job
	assert.Error(t, yaml.UnmarshalStrict(bytes.Replace(ds[0], []byte("completionMode:"), []byte("completionMod:"), 1), &bad))
}

func TestJobErrors(t *testing.T) {
	s := jobSpec
	s.Completions = 0
	_, err := dist.RenderJob(s)
	assert.ErrorContains(t, err, "completions must be >= 1")
	s = jobSpec
	s.Memory = "lots"
	_, err = dist.RenderJob(s)
	assert.ErrorContains(t, err, `memory "lots"`)
	s = jobSpec
	s.Parallelism = 0
	job, _, err := dist.Job(s)
	require.NoError(t, err)
	assert.EqualValues(t, 8, *job.Spec.Parallelism, "0 = every shard at once")
}

func TestSlurmScript(t *testing.T) {
	s, err := dist.Slurm(dist.SlurmSpec{
		Name: "pdemu-28d9f93eb4", Pdemu: "/opt/pdemu/bin/pdemu",
		Args:      []string{"compare", "1p3d-mlx5", "--set", "router.tau_append=1024,4096", "--var", "note=it's", "--shard", "env", "--out", "/scratch/study"},
		MergeArgs: []string{"report", "/scratch/study", "--out", "/scratch/study/report.html"},
		Tasks:     8, Parallel: 3, Dir: "/home/u/work", Logs: "/scratch/study", CPUs: 1, Memory: "2G", Time: "01:00:00",
		Digest: "sha256:28d9f93eb467a545b78f49776914fbd887b9112e9f21a753ad403850ed682069",
	})
	require.NoError(t, err)
	golden(t, "slurm.sh.golden", []byte(s))
	assert.Contains(t, s, "#SBATCH --array=0-7%3\n")
	assert.Contains(t, s, `'note=it'\''s'`, "arguments are shell-quoted")
	_, err = dist.Slurm(dist.SlurmSpec{Pdemu: "pdemu"})
	assert.ErrorContains(t, err, "tasks must be >= 1")
}

func TestServeDecodesStrictly(t *testing.T) {
	b, err := dist.RenderServe(dist.ServeSpec{
		Name: "pdemu-64p192d", Image: "registry.example/pdemu:v1", Groups: 4, Port: 8000,
		Args: []string{"serve", "64p192d", "--listen", "0.0.0.0:8000", "--allow-remote", "--out", "/results"},
		CPU:  "2", Memory: "4Gi",
	})
	require.NoError(t, err)
	golden(t, "serve.yaml.golden", b)
	ds := docs(b)
	require.Len(t, ds, 2)
	var svc corev1.Service
	var sts appsv1.StatefulSet
	strict(t, ds[0], &svc)
	strict(t, ds[1], &sts)
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "headless")
	assert.Equal(t, "StatefulSet", sts.Kind)
	assert.EqualValues(t, 4, *sts.Spec.Replicas)
	assert.Equal(t, svc.Name, sts.Spec.ServiceName)
	assert.Equal(t, svc.Spec.Selector, sts.Spec.Selector.MatchLabels)
	assert.Equal(t, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
	c := sts.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	assert.True(t, strings.HasSuffix(args, "--group $(POD_INDEX)/4"), args)
	assert.Equal(t, "metadata.labels['apps.kubernetes.io/pod-index']", c.Env[0].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, "/health", c.ReadinessProbe.HTTPGet.Path)
	assert.Empty(t, validation.IsDNS1123Label(sts.Name))
	assert.Empty(t, validation.IsDNS1035Label(svc.Name), "a Service name is a DNS-1035 label")
	assert.Equal(t, c.Ports[0].Name, svc.Spec.Ports[0].TargetPort.StrVal)
	assert.Empty(t, validation.IsValidPortName(c.Ports[0].Name))
}
