# torchspec training_controller.py, _partition_results (lines 409-414), as quoted in the issue
for i, result in enumerate(results):
    partitions[i % self.dp_size].append(result)
