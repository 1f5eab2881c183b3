# sticky-1p3d.hcl -- the default 1P3D cluster under the sticky-only
# baseline: a session stays on the decode worker it first went to (round
# robin for new sessions), with no overlap scoring, no admission and no
# migration. It isolates how much of KVC-Router's gain is plain
# stickiness (and shows the hot spots admission exists to prevent).

extends = "1p3d-mlx5.hcl"
name    = "sticky-1p3d"

router "sticky_only" {}
