package report

import (
	"testing"
)

// BenchmarkBuildStudy renders the report of a six-run, two-workload study
// of 5,000 requests per run (per_request.csv, instances.csv, links.csv
// and router_windows.csv parsed once; the page and its SVGs built each
// iteration).
func BenchmarkBuildStudy(b *testing.B) {
	fs := studyFixtures()
	for i := range fs {
		fs[i].requests = 5000
		if fs[i].failed > 0 {
			fs[i].failed = 2500
		}
		fs[i].direct = fs[i].direct * 125
	}
	root, runs := loadStudy(b, fs)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := BuildWith(Options{Title: "bench", BaseDir: root}, runs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadRun reads one run directory of 20,000 requests (only the
// columns the report uses are kept).
func BenchmarkLoadRun(b *testing.B) {
	f := studyFixtures()[0]
	f.requests, f.direct = 20000, 15000
	dir := writeFixture(b, b.TempDir(), f)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
