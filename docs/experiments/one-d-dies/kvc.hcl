# One decode worker dies mid-run: KVC-Router. The default 1P3D cluster
# (1p3d-mlx5.hcl); d0 crashes 40 s into the run and restarts with empty
# memory 30 s later. See README.md in this directory.

extends = "<embedded>/1p3d-mlx5.hcl"
name    = "one-d-dies-kvc"

dynamic "decode" {
  content {
    kv_budget_tokens = 92104
    dynamic "crash" {
      for_each = decode.value == 0 ? [1] : []
      content {
        at            = "40s"
        restart_after = "30s"
      }
    }
  }
}
