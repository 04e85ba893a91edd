# Pseudo code as posted by the reporter (MXNet Module API, 8 GPUs on one host)
net = mx.sym.load(model_file)
ctx = [mx.gpu(i) for i in range(8)]
model = mx.mod.Module(
    symbol=net,
    context=ctx,
    data_names=['data'],
    label_names=['label']
    )
#load train input data
#load train output data
for each epoch:
    for each batch:
        #prepare the train input/output data for current batch
        train_iter=mx.io.NDArrayIter(train_in, train_out,batch_size)
        for batch in train_iter:
            model.forward(batch, is_train=True)
            model.backward()
            model.update()
