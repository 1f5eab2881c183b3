package gpu

// Forget drops session s's prompt snapshot, as its last turn would (the
// router forgot the idle session: cluster.ForgetSessions): a later
// request of s reseeds from what the prefix cache still holds.
func (w *PrefillWorker) Forget(s int32) { delete(w.snap, s) }
