# One worker dies mid-run: 4-way DP (dp4.hcl, four fused workers behind
# cache-aware data parallelism). w0 crashes 40 s into the run and restarts
# with empty memory 30 s later. See README.md in this directory.

extends = "<embedded>/dp4.hcl"
name    = "one-d-dies-dp"

dynamic "fused" {
  content {
    dynamic "crash" {
      for_each = fused.value == 0 ? [1] : []
      content {
        at            = "40s"
        restart_after = "30s"
      }
    }
  }
}
