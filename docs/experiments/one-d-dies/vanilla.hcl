# One decode worker dies mid-run: vanilla P/D. The default 1P3D cluster
# (vanilla-pd-1p3d.hcl); d0 crashes 40 s into the run and restarts with empty
# memory 30 s later. See README.md in this directory.

extends = "<embedded>/vanilla-pd-1p3d.hcl"
name    = "one-d-dies-vanilla"

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
