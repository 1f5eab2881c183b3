# One decode worker dies mid-run: vanilla P/D. kvc.hcl's cluster and crash
# (d0 crashes 40 s into the run and restarts with empty memory 30 s later),
# routed by vanilla P/D as vanilla-pd-1p3d.hcl routes 1p3d-mlx5.hcl: the
# crash is written once, in kvc.hcl. See README.md in this directory.

extends = "kvc.hcl"
name    = "one-d-dies-vanilla"

router "vanilla" {
  block_tokens = 24
}
