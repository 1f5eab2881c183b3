// Package experiment runs named experiments: sets of independent,
// deterministic pdemu runs (scenario × workload × seed) executed in
// parallel goroutines, summarised in one Report that sets published
// figures against emulated ones, each with a tolerance and a verdict.
//
// Contract: Run is deterministic in everything but wall-clock fields (the
// same name and Options give the same Report figures, whatever the
// parallelism); every run is an ordinary actors.Run of a validated
// topology.Spec, so a run's per-run outputs (output.Write) are those the
// CLI writes for the same spec and source. The only experiment today is
// "kvc-paper" (kvcpaper.go): the KVC-Router paper's evaluation and its
// open questions (spec 000_*, sections 5, 7 and 9).
package experiment

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// files holds the experiment's scenarios: the runnable files at
// kvcpaper/*.hcl and the bases they extend under kvcpaper/base/ (not runs
// on their own).
//
//go:embed kvcpaper/*.hcl kvcpaper/base/*.hcl
var files embed.FS

// filePrefix is the pseudo-directory of the embedded experiment files in
// file names (Spec.Source, diagnostics, RunSummary.Scenario): a file's
// extends resolve in the embedded files under it (experimentFS).
const filePrefix = "<experiment>/"

// experimentFS serves files under filePrefix, so that topology.ParseFS
// names the experiment's files "<experiment>/kvcpaper/NAME.hcl" and
// resolves their extends in the embedded files.
type experimentFS struct{}

func (experimentFS) Open(name string) (fs.File, error) {
	rest, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return files.Open(rest)
}

// Options tune an experiment run.
type Options struct {
	// Seeds are the workload seeds of the runs that are repeated across
	// seeds (default 1, 2, 3).
	Seeds []uint64
	// Parallel is the number of runs in flight (default GOMAXPROCS).
	Parallel int
	// OutDir, when set, receives each run's outputs (output.Write) under
	// OutDir/runs/<run name>/ as the run ends.
	OutDir string
	// Force lets a run's directory under OutDir replace a previous run's
	// outputs (output.WriteOptions.Force).
	Force bool
	// Short runs a reduced set (one seed, no sensitivity runs) on a
	// workload cut to ShortRequests requests (tests).
	Short bool
	// Sensitivity adds the sensitivity runs (sensitivity.go): every
	// fitted and assumed parameter at its low and high value.
	Sensitivity bool
	// Logger (default: hclog at Warn to stderr).
	Logger hclog.Logger
	// Progress, when set, is called (from the runs' goroutines, serialised)
	// as each run ends.
	Progress func(done, total int, run string)
}

// Names lists the experiments Run knows.
func Names() []string { return []string{"kvc-paper"} }

// Run runs the experiment name.
func Run(ctx context.Context, name string, opts Options) (*Report, error) {
	switch name {
	case "kvc-paper":
		return runKVCPaper(ctx, opts)
	}
	return nil, fmt.Errorf("experiment: unknown experiment %q (known: %s)", name, strings.Join(Names(), ", "))
}

// runDef is one run of an experiment.
type runDef struct {
	name   string            // unique; the per-run output directory
	file   string            // kvcpaper/<file>.hcl
	vars   map[string]string // HCL variables
	seed   uint64
	source func(seed uint64) (workload.Source, error)
	cap    int           // client concurrency cap (0 = none)
	window time.Duration // router-counter window (0 = Window)
}

// runOut is what a run leaves for the report.
type runOut struct {
	def  runDef
	spec *topology.Spec
	res  *actors.Result
	st   runStats
}

func parseOptions(vars map[string]string) topology.Options { return cluster.ParseOptions(vars) }

// loadSpec parses the embedded experiment file kvcpaper/<file>.hcl, its
// extends resolved in the embedded files.
func loadSpec(file string, vars map[string]string) (*topology.Spec, error) {
	return topology.ParseFS(experimentFS{}, filePrefix+"kvcpaper/"+file+".hcl", parseOptions(vars))
}

// execute runs defs with opts.Parallel goroutines and returns their
// outputs in defs order.
func execute(ctx context.Context, defs []runDef, opts Options, keep func(runDef) bool) ([]*runOut, error) {
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	log := opts.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "experiment", Level: hclog.Warn})
	}
	outs := make([]*runOut, len(defs))
	errs := make([]error, len(defs))
	var mu sync.Mutex
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i], errs[i] = runOne(ctx, defs[i], opts, log, keep(defs[i]))
				mu.Lock()
				done++
				if opts.Progress != nil {
					opts.Progress(done, len(defs), defs[i].name)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range defs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return outs, errors.Join(errs...)
}

func runOne(ctx context.Context, d runDef, opts Options, log hclog.Logger, keepRecords bool) (*runOut, error) {
	vars := map[string]string{"seed": fmt.Sprint(d.seed)}
	for k, v := range d.vars {
		vars[k] = v
	}
	spec, err := loadSpec(d.file, vars)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", d.name, err)
	}
	spec.Workload.Seed = d.seed
	spec.Name = d.name
	src, err := d.source(d.seed)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", d.name, err)
	}
	if d.cap > 0 {
		src = workload.WithClientCap(src, d.cap)
	}
	res, err := actors.Run(ctx, spec, actors.Options{Logger: log.Named(d.name), Source: src})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", d.name, err)
	}
	if opts.OutDir != "" {
		if err := output.Write(filepath.Join(opts.OutDir, "runs", d.name), res, output.WriteOptions{Force: opts.Force}); err != nil {
			return nil, fmt.Errorf("run %s: %w", d.name, err)
		}
	}
	win := d.window
	if win <= 0 {
		win = Window
	}
	// The trace's own append lengths (the generator again: it is cheap and
	// deterministic), to split a reseed's re-prefill into its new append and
	// the stale context.
	appends := map[int64]int{}
	if again, err := d.source(d.seed); err == nil {
		for {
			r, err := again.Next()
			if err != nil {
				break
			}
			appends[r.ID] = r.AppendLen
		}
	}
	o := &runOut{def: d, spec: spec, st: computeStats(spec, res, win, appends)}
	if keepRecords {
		o.res = res
	}
	return o, nil
}

// ---------------------------------------------------------------- report

// Figure is one published figure set against the emulation.
type Figure struct {
	Name        string  `json:"name"`
	Published   string  `json:"published"`
	Emulated    string  `json:"emulated"`
	Value       float64 `json:"-"`      // the emulated quantity the tolerance applies to (mean over seeds; JSON: value, null for NaN)
	Spread      string  `json:"spread"` // across seeds, when repeated
	Tolerance   string  `json:"tolerance"`
	InTolerance bool    `json:"in_tolerance"`
	// Verdict is the figure's class (VerdictClasses).
	Verdict string `json:"verdict"`
	// DependsOn are the fitted parameters fitted to or derived from this
	// figure; DecidedBy the fitted and assumed parameters whose low or
	// high value (--sensitivity) changes whether it is within tolerance.
	DependsOn []string `json:"depends_on,omitempty"`
	DecidedBy []string `json:"decided_by,omitempty"`
	// PartsMissed: a ratio or difference whose parts (rows of its own)
	// miss is a miss however close its value is: these are the parts.
	PartsMissed []string `json:"parts_missed,omitempty"`
	// Attribution is what the code computed from the runs to decompose
	// the figure (attribution.go): only computed numbers.
	Attribution []string `json:"attribution,omitempty"`
}

// MarshalJSON writes a NaN value (nothing to measure) as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	type plain Figure
	return json.Marshal(struct {
		plain
		Value *float64 `json:"value"`
	}{plain(f), nullable(f.Value)})
}

// UnmarshalJSON reads what MarshalJSON writes (null: NaN).
func (f *Figure) UnmarshalJSON(b []byte) error {
	type plain Figure
	aux := struct {
		*plain
		Value *float64 `json:"value"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	f.Value = math.NaN()
	if aux.Value != nil {
		f.Value = *aux.Value
	}
	return nil
}

// Table is a small text table.
type Table struct {
	Title  string     `json:"title,omitempty"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// Section is one question answered (text and tables).
type Section struct {
	Title  string   `json:"title"`
	Text   []string `json:"text"`
	Tables []Table  `json:"tables,omitempty"`
}

// RunSummary is one run's headline figures.
type RunSummary struct {
	Name        string  `json:"name"`
	Scenario    string  `json:"scenario"`
	Seed        uint64  `json:"seed"`
	Requests    int     `json:"requests"`
	Failed      int     `json:"failed"`
	DirectShare float64 `json:"direct_share"`
	PShare      float64 `json:"p_share"`
	TTFTp50     float64 `json:"ttft_p50_ms"`
	TTFTp90     float64 `json:"ttft_p90_ms"`
	TTFTp99     float64 `json:"ttft_p99_ms"`
	TTFTMean    float64 `json:"ttft_mean_ms"`
	E2Ep50      float64 `json:"e2e_p50_ms"`
	Prefilled   int64   `json:"prefilled_tokens"`
	Decoded     int64   `json:"decode_tokens"`
	Migrations  int     `json:"migrations"`
	Fallbacks   int     `json:"fallbacks"`
	Rejections  int     `json:"rejections"`
	Emulated    float64 `json:"emulated_s"`
}

// Report is an experiment's result.
type Report struct {
	Experiment string        `json:"experiment"`
	Seeds      []uint64      `json:"seeds"`
	Short      bool          `json:"short"`
	Wall       time.Duration `json:"-"`
	// Verdicts counts the figures per verdict class.
	Verdicts []VerdictCount `json:"verdicts"`
	Figures  []Figure       `json:"figures"`
	// Attribution are the computed breakdowns behind the figures.
	Attribution []Table `json:"attribution"`
	// Sensitivity is --sensitivity's result (nil without it).
	Sensitivity *Sensitivity `json:"sensitivity"`
	Sections    []Section    `json:"sections"`
	Runs        []RunSummary `json:"runs"`
	Notes       []string     `json:"notes"`

	outs map[string]*runOut // the runs' statistics, for tests
}

func (r *Report) runOut(name string) *runOut { return r.outs[name] }

// Figure returns the figure called name, or nil.
func (r *Report) Figure(name string) *Figure {
	for i := range r.Figures {
		if r.Figures[i].Name == name {
			return &r.Figures[i]
		}
	}
	return nil
}

// Run returns the summary of the run called name, or nil.
func (r *Report) Run(name string) *RunSummary {
	for i := range r.Runs {
		if r.Runs[i].Name == name {
			return &r.Runs[i]
		}
	}
	return nil
}

func sortRuns(rs []RunSummary) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
}

// writeTable writes t with columns padded (text) or as a markdown table.
func writeTable(w io.Writer, t Table, md bool) {
	if md {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(t.Header, " | "), strings.Repeat("---|", len(t.Header)))
		for _, r := range t.Rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = strings.ReplaceAll(c, "|", "\\|")
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
		return
	}
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len([]rune(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			if i == len(cells)-1 {
				fmt.Fprint(w, c)
				break
			}
			fmt.Fprintf(w, "%s%s  ", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		fmt.Fprintln(w)
	}
	line(t.Header)
	for _, r := range t.Rows {
		line(r)
	}
	fmt.Fprintln(w)
}
