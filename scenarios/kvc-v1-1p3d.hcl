# kvc-v1-1p3d.hcl -- the default 1P3D cluster under KVC-Router v1: the
# same algorithms without reset-on-success (Algorithm 3 line 8), which the
# paper (section 3.4) shows thrashing sessions between workers after a
# burst. Compare sessions.csv and summary.json's router block with
# 1p3d-mlx5.hcl.

extends = "1p3d-mlx5.hcl"
name    = "kvc-v1-1p3d"

# The paper's v1 parameters (spec section 7: epsilon 2, tau_append 2048);
# everything else is 1p3d-mlx5.hcl's v2 block.
router "kvc" {
  v1         = true
  epsilon    = 2
  tau_append = 2048
}
