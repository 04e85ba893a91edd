// excerpt, llm.c PR #248 (multi-GPU via NCCL), as shown in the review thread
// Averages out the loss and gradients across all GPUs. No-op when multi-GPU is disabled.
void gpt2_mutli_gpu_accumulate(GPT2* model, MultiGpuConfig* multi_gpu_config) {
    // Average all losses.
    model->accumulated_mean_loss = multi_gpu_cpu_float_mean(model->mean_loss, multi_gpu_config);
#ifdef MULTI_GPU
    // Average all gradients.
    char* grads_memory_iterator = (char*)model->grads_memory;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; ++i) {
        // [one ncclAllReduce per parameter tensor over the gradient buffer, on the main stream]
        ...
    }
#endif
}
// reviewer (karpathy): "ugh really sad to have this loop here :( with @ngc92 changed this will be just two calls.
// but ideally it would be 1."
