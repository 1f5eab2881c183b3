# claude-code-vanilla.hcl -- claude-code.hcl (the Claude Code sessions on
# 1P3D sized for them) routed by vanilla P/D: KVC-Router's baseline there.

extends = "claude-code.hcl"
name    = "claude-code-vanilla"

router "vanilla" {}
