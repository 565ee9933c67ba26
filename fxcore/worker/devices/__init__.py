"""The devices a class is judged for, and fx-lsp's own processes kept off the machine's
accelerators: ``accelerator_guard`` (no CUDA, HIP or XPU initialisation in the zygote or a
worker, whatever the machine has), ``accelerator_calls`` (a record of every call of torch's
initialisation paths, for the tests), ``device_choice`` (which device a class's code is
written for), ``cuda_view`` (a GPU's view of torch for code written for one, with no
hardware: fake CUDA tensors and ``torch.cuda`` answering as one GPU would; what a
``Tensor.to`` call asks for is read by ``meta.to_arguments``, which the stand-ins of a
tensor's move without data use too), ``meta_reads`` (where code asks whether a tensor is on
meta and hears yes) and ``meta_branches`` (a class that does, built and judged on fake tensors
of its device instead). The devices import only the rooms below the stages."""
