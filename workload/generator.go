package workload

// What the synthetic generators (Agentic, SWEBench, Burst) share.

// orDefault sets *v to d when *v is the zero value: a generator config's
// "0 means the default" rule.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
