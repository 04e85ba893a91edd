# Excerpt quoted in the issue: deepspeed/runtime/zero/stage2.py (DeepSpeed ~0.7, Nov 2022),
# called from the gradient hooks for every filled bucket when ZeRO stage 2 runs with overlap_comm=True.
def average_tensor(self, tensor):
    if self.overlap_comm:
        torch.cuda.synchronize()
        stream = self.reduction_stream
    else:
        stream = torch.cuda.current_stream()

    with torch.cuda.stream(stream):
        if not self.reduce_scatter:
            self.gradient_reduction_w_predivide(tensor)
            return
        ...
