# kvscore-1p3d.hcl -- the default 1P3D cluster under KVC's Algorithm 1
# scoring without worker-side admission: the router decides Direct or Seed
# from its own residency belief and never asks the decode worker. It
# isolates the value of admission and of the reject/blacklist/migration
# machinery (the paper's optimistic router-side estimate, before v5).

extends = "1p3d-mlx5.hcl"
name    = "kvscore-1p3d"

router "kv_score" {
  alpha = 1
}
