# Rough code as posted by the reporter (indentation restored; helper functions are the reporter's own, not shown).
def train(rank, dataset):
    setup_ddp(rank)
    model = create_model()
    loader = create_loader(dataset)

    train_iter = iter(loader)

    for i in range(NUM_ITERS):
        try:
            batch, targets = next(train_iter)
        except StopIteration:
            train_iter = iter(loader)
            # The dataset is being pickled and unpickled every time next is called on new iterator
            batch, targets = next(train_iter)

        step(model, batch, targets)

    cleanup_ddp(rank)


dataset = create_dataset()
mp.spawn(train, args=(dataset,), nprocs=WORLD_SIZE)
