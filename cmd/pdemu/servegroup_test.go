package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Two 'pdemu serve --group I/2' processes of 4p12d behind a
// session-affine reverse proxy (hash of X-Session-Id, as a user's gateway
// would) serve a bounded multi-turn load: every request answered, every
// session on one group with its later turns reusing its KV there, each
// group's metrics labelled with it, and 'pdemu report' merging the two
// groups' outputs into one study (refusing one group alone).
func TestServeGroupsBehindAffineProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("two wall-clock servers")
	}
	base := t.TempDir()
	const groups = 2
	addrs := make([]string, groups)
	outs := make([]string, groups)
	runs := make([]*cliRun, groups)
	for g := range groups {
		addrs[g], outs[g] = freeAddr(t), filepath.Join(base, fmt.Sprintf("g%d", g))
		runs[g] = startCLI(t, "serve", "4p12d", "--group", fmt.Sprintf("%d/%d", g, groups),
			"--listen", addrs[g], "--out", outs[g], "--time-scale", "50")
	}
	for g := range groups {
		waitHealthy(t, "http://"+addrs[g], runs[g])
	}

	// The gateway: session-affine by a hash of X-Session-Id.
	var mu sync.Mutex
	servedBy := map[string]map[int]int{} // session -> group -> requests
	groupOf := func(s string) int {
		h := fnv.New32a()
		h.Write([]byte(s))
		return int(h.Sum32() % groups)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		s := r.In.Header.Get("X-Session-Id")
		g := groupOf(s)
		mu.Lock()
		if servedBy[s] == nil {
			servedBy[s] = map[int]int{}
		}
		servedBy[s][g]++
		mu.Unlock()
		u, _ := url.Parse("http://" + addrs[g])
		r.SetURL(u)
	}})
	defer proxy.Close()

	const sessions, turns = 12, 3
	client := &http.Client{Timeout: 60 * time.Second}
	var wg sync.WaitGroup
	var failures []string
	perGroup := make([]int, groups)
	for s := range sessions {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			sid := fmt.Sprintf("session-%d", s)
			history := []map[string]string{}
			for turn := range turns {
				history = append(history, map[string]string{"role": "user",
					"content": fmt.Sprintf("%s turn %d: %s", sid, turn, strings.Repeat("tell me more about disaggregated serving ", 30))})
				body, _ := json.Marshal(map[string]any{"model": "pdemu", "messages": history, "max_tokens": 8})
				req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/v1/chat/completions", strings.NewReader(string(body)))
				req.Header.Set("X-Session-Id", sid)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got struct {
					Choices []struct {
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
				}
				mu.Lock()
				if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil || len(got.Choices) != 1 {
					failures = append(failures, fmt.Sprintf("%s turn %d: %d %s", sid, turn, resp.StatusCode, b))
				} else {
					perGroup[groupOf(sid)]++
				}
				mu.Unlock()
				history = append(history, map[string]string{"role": "assistant", "content": got.Choices[0].Message.Content})
			}
		}(s)
	}
	wg.Wait()
	require.Empty(t, failures, "every request answered")
	for s, by := range servedBy {
		assert.Len(t, by, 1, "session %s stayed on one group: %v", s, by)
	}
	for g := range groups {
		assert.Positive(t, perGroup[g], "the hash spreads the sessions over both groups")
		r, err := http.Get("http://" + addrs[g] + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		assert.Contains(t, string(b), fmt.Sprintf(`group="%d"`, g), "metrics labelled with the group")
		assert.NotContains(t, string(b), fmt.Sprintf(`group="%d"`, 1-g))
	}

	for g := range groups {
		runs[g].cancel()
	}
	for g := range groups {
		require.NoError(t, runs[g].wait(t, 60*time.Second, fmt.Sprintf("group %d's drain", g)), runs[g].stderr.String())
	}
	reused := 0
	for g := range groups {
		recs, col := readPerRequest(t, outs[g], "state", "turn", "cached_tokens")
		assert.Len(t, recs, perGroup[g], "group %d's outputs hold exactly the requests routed to it", g)
		for _, r := range recs {
			assert.Equal(t, "completed", r[col["state"]])
			if turn, _ := strconv.Atoi(r[col["turn"]]); turn > 0 {
				if c, _ := strconv.Atoi(r[col["cached_tokens"]]); c > 0 {
					reused++
				}
			}
		}
	}
	assert.Equal(t, sessions*(turns-1), reused, "every later turn reused its session's KV on its group")

	rep := filepath.Join(base, "fleet", "report.html")
	require.NoError(t, os.MkdirAll(filepath.Dir(rep), 0o755))
	stdout, _, err := runCLI(t, "report", outs[1], outs[0], "--out", rep)
	require.NoError(t, err)
	assert.Contains(t, stdout, "report of 2 runs")
	csvb, err := os.ReadFile(filepath.Join(filepath.Dir(rep), "compare.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csvb)), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[1], "4p12d__group=0-of-2,"), "groups in group order: %s", lines[1])
	_, _, err = runCLI(t, "report", outs[1], "--out", rep)
	assert.Equal(t, 2, exitCode(err), "one group alone is not the fleet: %v", err)
	assert.ErrorContains(t, err, "1 of the plan's 2 rows are missing")
}

func TestServeEmitK8s(t *testing.T) {
	stdout, _, err := runCLI(t, "serve", "64p192d", "--emit", "k8s", "--groups", "4", "--image", "me/pdemu:1", "--time-scale", "1")
	require.NoError(t, err)
	docs := strings.Split(stdout, "\n---\n")
	require.Len(t, docs, 2)
	var sts appsv1.StatefulSet
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &sts))
	assert.EqualValues(t, 4, *sts.Spec.Replicas)
	assert.Equal(t, []string{"serve", "64p192d", "--time-scale", "1", "--listen", "0.0.0.0:8000", "--allow-remote", "--out", "/results/out", "--force", "--group", "$(POD_INDEX)/4"},
		sts.Spec.Template.Spec.Containers[0].Args)

	_, _, err = runCLI(t, "serve", "1p3d-mlx5", "--emit", "k8s", "--groups", "2")
	assert.Equal(t, 2, exitCode(err), "1 prefill worker does not split in 2: %v", err)
	_, _, err = runCLI(t, "serve", "--group", "2/2")
	assert.Equal(t, 2, exitCode(err))
}
