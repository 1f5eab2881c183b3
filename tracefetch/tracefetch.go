// Package tracefetch downloads the public traces pdemu's docs use into a
// local cache directory, from URLs pinned at a commit of each source
// repository, and checks every file against its pinned SHA-256.
//
// Contract: a trace NAME is stored as DIR/NAME/ (the same layout as
// ../shared/traces), DIR being Dir(): $PDEMU_TRACE_CACHE when set, else
// os.UserCacheDir()/pdemu/traces. A file is downloaded to FILE.part and
// renamed to FILE only after its size and SHA-256 match the catalog, so a
// file under its own name is always complete and verified; a checksum
// mismatch removes the .part file and is an error naming the URL and
// both hashes. An interrupted download resumes from its .part file with
// an HTTP Range request (a server that ignores Range restarts it from
// zero). A file already present with the right hash is not downloaded
// again. Nothing here runs at import time; the network is reached only
// through Fetcher (tests serve the files with net/http/httptest). Run one
// fetch at a time per cache: two fetching the same file into one .part
// fail its checksum (and remove it) rather than leave a wrong file.
package tracefetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// File is one file of a trace.
type File struct {
	Name   string // file name under DIR/NAME/
	Path   string // path in the source repository
	Size   int64
	SHA256 string // lower-case hex
}

// Trace is a named set of files from one repository at one commit.
type Trace struct {
	Name    string
	Title   string
	Repo    string // GitHub owner/name
	Commit  string
	Licence string
	// Main is the file `--trace NAME` names; "" means the directory
	// itself (a directory of Claude Code sessions).
	Main  string
	Files []File
}

// URL is where f of t is downloaded from, under base (rawBase unless a
// test serves the files).
func (t Trace) URL(base string, f File) string {
	return strings.TrimSuffix(base, "/") + "/" + t.Repo + "/" + t.Commit + "/" + f.Path
}

// Size is the sum of t's file sizes.
func (t Trace) Size() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Size
	}
	return n
}

// Catalog returns the known traces, sorted by name.
func Catalog() []Trace {
	out := append([]Trace(nil), catalog...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names are the catalog's trace names, sorted.
func Names() []string {
	var ns []string
	for _, t := range Catalog() {
		ns = append(ns, t.Name)
	}
	return ns
}

// Lookup returns the trace called name.
func Lookup(name string) (Trace, bool) {
	for _, t := range catalog {
		if t.Name == name {
			return t, true
		}
	}
	return Trace{}, false
}

// EnvDir is the environment variable that overrides the cache directory.
const EnvDir = "PDEMU_TRACE_CACHE"

// Dir is the trace cache directory: $PDEMU_TRACE_CACHE, else
// os.UserCacheDir()/pdemu/traces (~/.cache/pdemu/traces on Linux).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tracefetch: no cache directory (set %s): %w", EnvDir, err)
	}
	return filepath.Join(c, "pdemu", "traces"), nil
}

// Path is where trace t lives under dir: the Main file, or the
// directory.
func (t Trace) Path(dir string) string {
	p := filepath.Join(dir, t.Name)
	if t.Main != "" {
		p = filepath.Join(p, t.Main)
	}
	return p
}

// Resolve maps a --trace value that names a catalog trace to its path in
// dir. ok is false when name is not a catalog name. err is set when it is
// one but the trace has not been fetched (or is incomplete): the error
// says which command fetches it.
func Resolve(dir, name string) (path string, ok bool, err error) {
	t, ok := Lookup(name)
	if !ok {
		return "", false, nil
	}
	for _, f := range t.Files {
		if _, err := os.Stat(filepath.Join(dir, t.Name, f.Name)); err != nil {
			return "", true, fmt.Errorf("trace %q is not in the trace cache %s (missing %s): run 'pdemu trace fetch %s'", name, dir, f.Name, name)
		}
	}
	return t.Path(dir), true, nil
}

// Hint is the advice added to an error about a missing trace path: which
// `pdemu trace fetch` gets it, when the path looks like one of the
// catalog's traces (its last element, or the one before a Main file, is a
// trace name); "" otherwise.
func Hint(path string) string {
	clean := filepath.Clean(path)
	base, parent := filepath.Base(clean), filepath.Base(filepath.Dir(clean))
	for _, t := range catalog {
		if base == t.Name || (parent == t.Name && (t.Main == "" || base == t.Main)) {
			return fmt.Sprintf("fetch it with 'pdemu trace fetch %s', then name it %s (--trace %s)", t.Name, t.Name, t.Name)
		}
	}
	return ""
}

// Progress receives the bytes of one file as they arrive: Start is
// called once per file with its name, its size and the bytes already
// present (a resumed download), then Write with each chunk, then Done.
type Progress interface {
	Start(name string, size, have int64)
	io.Writer
	Done()
}

// defaultClient gives up on a server that does not answer within a
// minute; a body that stalls is stopped by the context (SIGINT), its
// bytes kept for the next run.
var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: time.Minute,
	IdleConnTimeout:       time.Minute,
}}

// Fetcher downloads catalog traces into Dir.
type Fetcher struct {
	Dir    string
	Client *http.Client // nil: defaultClient (proxy from the environment, header timeout)
	// Base replaces https://raw.githubusercontent.com (tests serve the
	// files locally).
	Base     string
	Progress Progress // nil: no progress
}

// Result is what Fetch did with one file.
type Result struct {
	File       string // path on disk
	Downloaded int64  // bytes transferred now (0: already present)
	Resumed    int64  // bytes kept from an earlier .part file
}

// Fetch downloads every file of t not yet present and verified. It stops
// at the first error; files completed before it stay (verified).
func (f *Fetcher) Fetch(ctx context.Context, t Trace) ([]Result, error) {
	dir := filepath.Join(f.Dir, t.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tracefetch: %w", err)
	}
	var out []Result
	for _, file := range t.Files {
		r, err := f.fetchFile(ctx, t, file, dir)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Verify checks that every file of t is in dir with its pinned size and
// SHA-256.
func Verify(dir string, t Trace) error {
	for _, file := range t.Files {
		p := filepath.Join(dir, t.Name, file.Name)
		sum, n, err := hashFile(p)
		if err != nil {
			return fmt.Errorf("tracefetch: %w", err)
		}
		if n != file.Size || sum != file.SHA256 {
			return fmt.Errorf("tracefetch: %s: %d bytes with sha256 %s, want %d bytes with sha256 %s", p, n, sum, file.Size, file.SHA256)
		}
	}
	return nil
}

func hashFile(p string) (string, int64, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (f *Fetcher) fetchFile(ctx context.Context, t Trace, file File, dir string) (Result, error) {
	final := filepath.Join(dir, file.Name)
	res := Result{File: final}
	if sum, n, err := hashFile(final); err == nil {
		if n == file.Size && sum == file.SHA256 {
			return res, nil
		}
		// Not what the catalog pins (edited or truncated by hand):
		// download it again rather than trust it.
		if err := os.Remove(final); err != nil {
			return res, fmt.Errorf("tracefetch: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("tracefetch: %w", err)
	}

	part := final + ".part"
	h := sha256.New()
	have, err := resumeFrom(part, file.Size, h)
	if err != nil {
		return res, err
	}
	url := t.URL(f.base(), file)
	n, kept, err := f.download(ctx, url, part, file, have, h)
	res.Downloaded, res.Resumed = n, kept
	if err != nil {
		return res, err
	}
	size := kept + n
	sum := hex.EncodeToString(h.Sum(nil))
	if size == file.Size && sum == file.SHA256 {
		// What was received is right; check what is on disk too (another
		// process writing the same .part, a disk that lost a write) before
		// the file takes its name.
		if dsum, dn, err := hashFile(part); err != nil {
			return res, fmt.Errorf("tracefetch: %w", err)
		} else if dn != size || dsum != sum {
			size, sum = dn, dsum
		}
	}
	if size != file.Size || sum != file.SHA256 {
		_ = os.Remove(part)
		return res, fmt.Errorf("tracefetch: %s: checksum mismatch: got %d bytes with sha256 %s, want %d bytes with sha256 %s; the download was removed (the source changed or the transfer was corrupted: run the command again, and report it if it persists)",
			url, size, sum, file.Size, file.SHA256)
	}
	if err := os.Rename(part, final); err != nil {
		return res, fmt.Errorf("tracefetch: %w", err)
	}
	return res, nil
}

func (f *Fetcher) base() string {
	if f.Base != "" {
		return f.Base
	}
	return rawBase
}

// resumeFrom hashes the bytes already in part into h and returns how
// many there are (0 without a usable .part file: absent, or longer than
// the file can be, which is then removed).
func resumeFrom(part string, size int64, h hash.Hash) (int64, error) {
	fh, err := os.Open(part)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("tracefetch: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return 0, fmt.Errorf("tracefetch: %w", err)
	}
	if fi.Size() > size {
		fh.Close()
		return 0, os.Remove(part)
	}
	n, err := io.Copy(h, fh)
	if err != nil {
		return 0, fmt.Errorf("tracefetch: %w", err)
	}
	return n, nil
}

// download appends the bytes of url from offset have to part (truncating
// it when the server sends the whole file), hashing them into h. It
// returns the bytes written now and those kept from before.
func (f *Fetcher) download(ctx context.Context, url, part string, file File, have int64, h hash.Hash) (n, kept int64, err error) {
	if have == file.Size && have > 0 {
		return 0, have, nil // complete .part from an interrupted rename
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("tracefetch: %w", err)
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	client := f.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("tracefetch: %w", err)
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case have > 0 && resp.StatusCode == http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			return 0, 0, fmt.Errorf("tracefetch: %s: asked for bytes from %d, got Content-Range %q", url, have, resp.Header.Get("Content-Range"))
		}
		flags |= os.O_APPEND
		kept = have
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC // no resume: start over
		h.Reset()
	case have > 0 && resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		_ = os.Remove(part)
		return 0, 0, fmt.Errorf("tracefetch: %s: the server refused to resume at byte %d (HTTP 416); the partial download was removed: run the command again", url, have)
	default:
		return 0, 0, fmt.Errorf("tracefetch: %s: HTTP %s", url, resp.Status)
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("tracefetch: %w", err)
	}
	var w io.Writer = io.MultiWriter(out, h)
	if p := f.Progress; p != nil {
		p.Start(file.Name, file.Size, kept)
		defer p.Done()
		w = io.MultiWriter(out, h, p)
	}
	// Never read more than the file can be: a wrong or endless response
	// fails the checksum instead of filling the disk.
	n, err = io.Copy(w, io.LimitReader(resp.Body, file.Size-kept+1))
	if cerr := out.Sync(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, kept, fmt.Errorf("tracefetch: %s: %w (the %d bytes received are kept in %s; run the command again to resume)", url, err, kept+n, part)
	}
	return n, kept, nil
}

// rangeStart parses "bytes START-END/SIZE".
func rangeStart(cr string) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	s, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}
