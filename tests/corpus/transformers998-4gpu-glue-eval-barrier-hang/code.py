# Line quoted by the reporter (examples/run_glue.py, load_and_cache_examples), stored copy of issue #998
    if args.local_rank == 0:
        torch.distributed.barrier()  # Make sure only the first process in distributed training process the dataset, and the others will use the cache
