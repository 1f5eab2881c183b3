package tracefetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// server serves content at /owner/repo/<commit>/<path> with Range
// support (http.ServeContent), recording the Range headers it gets.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte // URL path -> bytes
	ranges   []string
	noRange  bool // ignore Range (always 200 with the whole file)
	cutAfter int  // > 0: send only this many bytes, then drop the connection
}

func newServer(t *testing.T) *server {
	s := &server{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.files[r.URL.Path]
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		noRange, cut := s.noRange, s.cutAfter
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if noRange {
			r.Header.Del("Range")
		}
		if cut > 0 {
			w.Header().Set("Content-Length", "999999")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b[:cut])
			hj, _ := w.(http.Hijacker)
			conn, buf, err := hj.Hijack()
			if err == nil {
				_ = buf.Flush()
				_ = conn.Close()
			}
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(s.Close)
	return s
}

// testTrace is a two-file trace served by s.
func testTrace(s *server, a, b []byte) Trace {
	t := Trace{Name: "tiny", Repo: "o/r", Commit: strings.Repeat("a", 40), Main: "a.jsonl", Files: []File{
		{"a.jsonl", "traces/a.jsonl", int64(len(a)), sum(a)},
		{"LICENSE", "LICENSE", int64(len(b)), sum(b)},
	}}
	s.files["/o/r/"+t.Commit+"/traces/a.jsonl"] = a
	s.files["/o/r/"+t.Commit+"/LICENSE"] = b
	return t
}

// partPath is where a fetch into dir keeps testTrace's unfinished a.jsonl.
func partPath(dir string) string { return filepath.Join(dir, "tiny", "a.jsonl.part") }

// writePart leaves data in dir as the a.jsonl of an interrupted fetch.
func writePart(t *testing.T, dir string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(partPath(dir)), 0o755))
	require.NoError(t, os.WriteFile(partPath(dir), data, 0o644))
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func TestFetchDownloadsVerifiesAndSkipsWhatIsThere(t *testing.T) {
	s := newServer(t)
	a, lic := payload(100_000), []byte("licence text\n")
	tr := testTrace(s, a, lic)
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	res, err := f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, int64(len(a)), res[0].Downloaded)
	got, err := os.ReadFile(filepath.Join(f.Dir, "tiny", "a.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, a, got)
	require.NoError(t, Verify(f.Dir, tr))

	// Again: nothing is downloaded.
	s.ranges = nil
	res, err = f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Zero(t, res[0].Downloaded+res[1].Downloaded)
	assert.Empty(t, s.ranges, "no request for files already verified")

	// A file changed by hand is downloaded again, not trusted.
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "tiny", "LICENSE"), []byte("edited"), 0o644))
	res, err = f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Equal(t, int64(len(lic)), res[1].Downloaded)
	require.NoError(t, Verify(f.Dir, tr))
}

func TestChecksumMismatchLeavesNoFile(t *testing.T) {
	s := newServer(t)
	a := payload(5000)
	tr := testTrace(s, a, []byte("L"))
	// The server now serves other bytes of the same length.
	bad := append([]byte(nil), a...)
	bad[2500] ^= 1
	s.files["/o/r/"+tr.Commit+"/traces/a.jsonl"] = bad
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	_, err := f.Fetch(context.Background(), tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum mismatch")
	assert.Contains(t, err.Error(), sum(a), "names the pinned hash")
	assert.Contains(t, err.Error(), sum(bad), "and the one received")
	assert.Contains(t, err.Error(), "/traces/a.jsonl", "names the URL")
	assert.NoFileExists(t, filepath.Join(f.Dir, "tiny", "a.jsonl"), "no file under its own name")
	assert.NoFileExists(t, partPath(f.Dir), "no partial file either")
	_, ok, err := Resolve(f.Dir, "tiny")
	assert.False(t, ok, "not a catalog name") // Resolve only knows the catalog
	assert.NoError(t, err)
	assert.Error(t, Verify(f.Dir, tr))

	// A longer response than the pinned size is cut and refused too.
	s.files["/o/r/"+tr.Commit+"/traces/a.jsonl"] = append(append([]byte(nil), a...), payload(1<<20)...)
	_, err = f.Fetch(context.Background(), tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum mismatch")
	assert.Contains(t, err.Error(), "got 5001 bytes", "reads at most one byte past the pinned size")
	assert.NoFileExists(t, partPath(f.Dir))
}

func TestResumeWithRange(t *testing.T) {
	s := newServer(t)
	a := payload(64_000)
	tr := testTrace(s, a, []byte("L"))
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	writePart(t, f.Dir, a[:40_000])
	res, err := f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Equal(t, "bytes=40000-", s.ranges[0])
	assert.Equal(t, int64(40_000), res[0].Resumed)
	assert.Equal(t, int64(24_000), res[0].Downloaded, "only the rest is transferred")
	require.NoError(t, Verify(f.Dir, tr))
	assert.NoFileExists(t, partPath(f.Dir))
}

func TestResumeFromServerWithoutRangeStartsOver(t *testing.T) {
	s := newServer(t)
	s.noRange = true
	a := payload(10_000)
	tr := testTrace(s, a, []byte("L"))
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	writePart(t, f.Dir, []byte("garbage garbage"))
	res, err := f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Zero(t, res[0].Resumed)
	assert.Equal(t, int64(10_000), res[0].Downloaded)
	require.NoError(t, Verify(f.Dir, tr))
}

func TestCorruptPartFailsThenRecovers(t *testing.T) {
	s := newServer(t)
	a := payload(10_000)
	tr := testTrace(s, a, []byte("L"))
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	bad := append([]byte(nil), a[:5000]...)
	bad[10] = '!'
	writePart(t, f.Dir, bad)
	_, err := f.Fetch(context.Background(), tr)
	require.ErrorContains(t, err, "checksum mismatch")
	assert.NoFileExists(t, partPath(f.Dir))
	_, err = f.Fetch(context.Background(), tr)
	require.NoError(t, err, "the next run starts from zero")
	require.NoError(t, Verify(f.Dir, tr))
}

func TestInterruptedTransferKeepsPartAndResumes(t *testing.T) {
	s := newServer(t)
	a := payload(50_000)
	tr := testTrace(s, a, []byte("L"))
	s.cutAfter = 20_000
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	_, err := f.Fetch(context.Background(), tr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run the command again to resume")
	assert.NoFileExists(t, filepath.Join(f.Dir, "tiny", "a.jsonl"))
	fi, err := os.Stat(partPath(f.Dir))
	require.NoError(t, err)
	assert.Equal(t, int64(20_000), fi.Size())

	s.cutAfter = 0
	s.ranges = nil
	res, err := f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Equal(t, "bytes=20000-", s.ranges[0])
	assert.Equal(t, int64(30_000), res[0].Downloaded)
	require.NoError(t, Verify(f.Dir, tr))
}

func TestHTTPErrorIsClear(t *testing.T) {
	s := newServer(t)
	tr := testTrace(s, []byte("x"), []byte("L"))
	delete(s.files, "/o/r/"+tr.Commit+"/traces/a.jsonl")
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL}
	_, err := f.Fetch(context.Background(), tr)
	require.ErrorContains(t, err, "404")
	assert.NoFileExists(t, filepath.Join(f.Dir, "tiny", "a.jsonl"))
}

type recProgress struct {
	starts []string
	bytes  int64
	done   int
}

func (p *recProgress) Start(name string, size, have int64) {
	p.starts = append(p.starts, name)
}
func (p *recProgress) Write(b []byte) (int, error) { p.bytes += int64(len(b)); return len(b), nil }
func (p *recProgress) Done()                       { p.done++ }

func TestProgressSeesEveryByte(t *testing.T) {
	s := newServer(t)
	a, lic := payload(30_000), []byte("licence")
	tr := testTrace(s, a, lic)
	p := &recProgress{}
	f := &Fetcher{Dir: t.TempDir(), Base: s.URL, Progress: p}
	_, err := f.Fetch(context.Background(), tr)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.jsonl", "LICENSE"}, p.starts)
	assert.Equal(t, int64(len(a)+len(lic)), p.bytes)
	assert.Equal(t, 2, p.done)
}

func TestCatalogIsWellFormed(t *testing.T) {
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	seen := map[string]bool{}
	for _, tr := range Catalog() {
		assert.False(t, seen[tr.Name], "duplicate name %s", tr.Name)
		seen[tr.Name] = true
		assert.Regexp(t, hex40, tr.Commit, tr.Name)
		assert.NotEmpty(t, tr.Licence, tr.Name)
		files := map[string]bool{}
		hasMain := tr.Main == ""
		for _, f := range tr.Files {
			assert.Regexp(t, hex64, f.SHA256, f.Name)
			assert.Positive(t, f.Size, f.Name)
			assert.False(t, files[f.Name], "duplicate file %s in %s", f.Name, tr.Name)
			files[f.Name] = true
			assert.Equal(t, filepath.Base(f.Name), f.Name, "flat layout")
			hasMain = hasMain || f.Name == tr.Main
		}
		assert.True(t, hasMain, "%s: Main %q is one of its files", tr.Name, tr.Main)
		assert.True(t, strings.HasPrefix(tr.URL(rawBase, tr.Files[0]), "https://raw.githubusercontent.com/"+tr.Repo+"/"+tr.Commit+"/"))
	}
	for _, n := range []string{"mooncake", "weka-claude-code", "azure-2023"} {
		assert.True(t, seen[n], "the docs' trace %s is in the catalog", n)
	}
}

// The catalog pins the very bytes of ../shared/traces: where a shared
// copy exists, it verifies against the catalog.
func TestCatalogMatchesSharedTraces(t *testing.T) {
	dir := os.Getenv("PDEMU_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "traces")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared traces not found at %s (set PDEMU_TRACES): %v", dir, err)
	}
	checked := 0
	for _, tr := range Catalog() {
		for _, f := range tr.Files {
			p := filepath.Join(dir, tr.Name, f.Name)
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			assert.Equal(t, f.SHA256, sum(b), p)
			assert.Equal(t, f.Size, int64(len(b)), p)
			checked++
		}
	}
	assert.Positive(t, checked)
}

func TestResolveAndHint(t *testing.T) {
	dir := t.TempDir()
	_, ok, err := Resolve(dir, "not-a-trace.jsonl")
	assert.False(t, ok)
	assert.NoError(t, err)

	_, ok, err = Resolve(dir, "mooncake")
	assert.True(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pdemu trace fetch mooncake")

	tr, _ := Lookup("mooncake")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "mooncake"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mooncake", tr.Main), []byte("x"), 0o644))
	p, ok, err := Resolve(dir, "mooncake")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, filepath.Join(dir, "mooncake", "synthetic_trace.jsonl"), p)

	wk, _ := Lookup("weka-claude-code")
	assert.Equal(t, filepath.Join(dir, "weka-claude-code"), wk.Path(dir), "a session directory resolves to the directory")

	assert.Contains(t, Hint("../shared/traces/weka-claude-code"), "pdemu trace fetch weka-claude-code")
	assert.Contains(t, Hint("/x/mooncake/synthetic_trace.jsonl"), "pdemu trace fetch mooncake")
	assert.Empty(t, Hint("/x/swe.jsonl"))
}

func TestDirHonoursEnv(t *testing.T) {
	t.Setenv(EnvDir, "/tmp/somewhere")
	d, err := Dir()
	require.NoError(t, err)
	assert.Equal(t, "/tmp/somewhere", d)
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	d, err = Dir()
	require.NoError(t, err)
	if filepath.Separator == '/' && !strings.Contains(d, "Library") { // Linux: XDG
		assert.Equal(t, filepath.Join("/tmp/xdg", "pdemu", "traces"), d)
	}
}

// Whatever prefix of the file an interrupted download left, the next
// fetch transfers exactly the rest and ends verified; a .part that is
// not a prefix of the file (corrupted) fails the checksum and is removed.
func TestResumeFromAnyPrefix(t *testing.T) {
	s := newServer(t)
	a := payload(3000)
	tr := testTrace(s, a, []byte("L"))
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(0, len(a)).Draw(rt, "k")
		corrupt := k > 0 && rapid.Bool().Draw(rt, "corrupt")
		dir, err := os.MkdirTemp(t.TempDir(), "c")
		require.NoError(rt, err)
		require.NoError(rt, os.MkdirAll(filepath.Join(dir, "tiny"), 0o755))
		part := append([]byte(nil), a[:k]...)
		if corrupt {
			part[rapid.IntRange(0, k-1).Draw(rt, "at")] ^= 0x80
		}
		if k > 0 {
			require.NoError(rt, os.WriteFile(partPath(dir), part, 0o644))
		}
		f := &Fetcher{Dir: dir, Base: s.URL}
		res, err := f.Fetch(context.Background(), tr)
		if corrupt {
			require.ErrorContains(rt, err, "checksum mismatch")
			assert.NoFileExists(rt, filepath.Join(dir, "tiny", "a.jsonl"))
			assert.NoFileExists(rt, partPath(dir))
			return
		}
		require.NoError(rt, err)
		assert.Equal(rt, int64(len(a)-k), res[0].Downloaded)
		assert.Equal(rt, int64(k), res[0].Resumed)
		require.NoError(rt, Verify(dir, tr))
	})
}

// The file is checked on disk before it takes its name: bytes another
// writer put into the .part while it downloaded fail the checksum even
// though the bytes received were right.
func TestOnDiskCheckBeforeRename(t *testing.T) {
	a := payload(50_000)
	var part string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(a[:25_000])
		w.(http.Flusher).Flush()
		// Another writer changes the .part's start meanwhile.
		for range 500 { // once the first half is on disk
			if fi, err := os.Stat(part); err == nil && fi.Size() >= 25_000 {
				fh, err := os.OpenFile(part, os.O_WRONLY, 0)
				if err == nil {
					_, _ = fh.WriteAt([]byte("XX"), 100)
					fh.Close()
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, _ = w.Write(a[25_000:])
	}))
	defer srv.Close()
	tr := Trace{Name: "tiny", Repo: "o/r", Commit: strings.Repeat("a", 40), Files: []File{{"a.jsonl", "a.jsonl", int64(len(a)), sum(a)}}}
	dir := t.TempDir()
	part = partPath(dir)
	_, err := (&Fetcher{Dir: dir, Base: srv.URL}).Fetch(context.Background(), tr)
	require.ErrorContains(t, err, "checksum mismatch")
	assert.NoFileExists(t, filepath.Join(dir, "tiny", "a.jsonl"))
	assert.NoFileExists(t, part)
}
