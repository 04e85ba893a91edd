# returnn/torch/engine.py @ 6bf8581c8c74b9476aec8d18189dea5e0edf003a, lines 396-413 (the lines the reporter linked, L408-L411, with context)
# Training runs with torch.distributed and reduce_type='param' (parameter averaging every N steps), not DDP.
        report_prefix = f"ep {self.epoch} train"
        try:
            while True:
                with torch.no_grad():
                    extern_data_raw = next(data_iter, None)

                step_begin_time = time.monotonic()

                if step_idx == 0 and log.verbose[5]:
                    print("Time to get first batch data:", hms(step_begin_time - epoch_start_time), file=log.v5)

                _has_data = torch.tensor([extern_data_raw is not None], dtype=torch.int8)
                if self._torch_distributed_ctx:
                    # use all reduce to check if all workers have data, if at least one worker does not have data,
                    # all workers finish this epoch
                    torch.distributed.all_reduce(_has_data, op=torch.distributed.ReduceOp.MIN)
                if not _has_data[0]:
                    break
