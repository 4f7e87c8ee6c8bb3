"""torchvision beside a CPU torch: the two operator names its import needs, when its own library cannot load.

transformers' video processors and its fast image processors use torchvision's transforms, which are plain
Python over torch tensors. PyPI's only torchvision for torch 2.13.0 (0.28.0) is a CUDA build: its C library
needs libtorch_cuda.so, which the CPU torch lacks, so it does not load, and torchvision then carries on without
its detection operators (nms, roi_align, …) as it is written to. Its import still registers a shape function for
two of them, `torchvision::nms` and `qnms`, without asking whether they exist, and that fails. Defining those
two names, with the signatures torchvision's C library gives them, lets the import finish; calling either
raises, as torchvision's other operators do without the library. Nothing agentloop runs calls them.

`install()` (agentloop/__init__.py) adds a finder that does this just before torchvision is first imported, so
nothing loads torch or torchvision before something asks for them. Where torchvision's library does load (a
CPU or matching CUDA build), the finder only steps aside.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

# The schemas torchvision's C library registers for the two operators its import gives shape functions.
SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    """Runs define_missing_ops() once, when `import torchvision` is first asked for, then finds nothing itself."""

    def find_spec(self, name, path=None, target=None):
        if name == "torchvision":
            sys.meta_path.remove(self)
            define_missing_ops()
        return None


def install() -> None:
    if "torchvision" not in sys.modules and not any(
        isinstance(f, _BeforeTorchvision) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _BeforeTorchvision())


def define_missing_ops() -> None:
    """Define the two operators when torchvision's C library does not load beside this torch."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    import torch

    library = next(Path(spec.submodule_search_locations[0]).glob("_C*.so"), None)
    try:
        if library is not None:
            torch.ops.load_library(str(library))
            return  # its own library loaded: it defines the operators itself
    except (OSError, RuntimeError):
        pass
    fragment = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS:
        fragment.define(schema)
    _KEPT.append(fragment)  # a Library object undefines its operators when it is garbage-collected


_KEPT: list = []
