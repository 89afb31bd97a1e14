"""Read XLA's HLO text: the one place in shardviz that parses it.

Text in, small frozen records out: a :class:`Module` of computations, each a
tuple of :class:`Instruction` (name, opcode, result shape, operands, raw
attributes), plus the module's source tables (``FileNames``,
``FunctionNames``, ``FileLocations``, ``StackFrames``). Helpers read the
attribute values that shardviz cares about: replica groups in their three
printed forms, ``source_target_pairs``, ``sharding={...}``, ``metadata={...}``
and a while loop's ``known_trip_count``. :func:`collective_ops` walks the
module and returns every collective once, with how many times one call of
the program runs it.

Split by what it reads: :mod:`.scanning` (brackets, quotes, shapes),
:mod:`.module` (computations, instructions, metadata, stack frames),
:mod:`.groups` (replica groups and source-target pairs), :mod:`.shardings`,
:mod:`.collectives` (loops, call structure, collectives), :mod:`.flops` (dots, loops
counted), :mod:`.hbm` (bytes read and written in the program's dtypes) and :mod:`.mlir`
(the lowered module's mesh declarations). Nothing here knows about JAX
objects; ids in replica groups stay what XLA prints (partition positions).
"""

from .collectives import (
    COLLECTIVE_KINDS,
    CollectiveOp,
    ExecutionCount,
    collective_kind,
    collective_ops,
    execution_counts,
    known_trip_count,
    permute_groups,
)
from .flops import DotFlops, MatmulFlops, dot_flops, matmul_flops
from .groups import ReplicaGroups, iota_array, mesh_form_groups, parse_replica_groups, parse_source_target_pairs
from .hbm import HbmBytes, hbm_bytes
from .mlir import declared_mesh_axis_names
from .module import (
    Computation,
    Instruction,
    Metadata,
    Module,
    StackFrame,
    parse_instruction,
    parse_metadata,
    parse_module,
)
from .scanning import NUMPY_NAMES, HloParseError, Shape, element_bits, parse_shape, unquote
from .shardings import HloSharding, parse_sharding

__all__ = [
    "COLLECTIVE_KINDS",
    "NUMPY_NAMES",
    "CollectiveOp",
    "Computation",
    "DotFlops",
    "ExecutionCount",
    "HbmBytes",
    "HloParseError",
    "HloSharding",
    "Instruction",
    "MatmulFlops",
    "Metadata",
    "Module",
    "ReplicaGroups",
    "Shape",
    "StackFrame",
    "collective_kind",
    "collective_ops",
    "declared_mesh_axis_names",
    "dot_flops",
    "element_bits",
    "execution_counts",
    "hbm_bytes",
    "iota_array",
    "known_trip_count",
    "matmul_flops",
    "mesh_form_groups",
    "parse_instruction",
    "parse_metadata",
    "parse_module",
    "parse_replica_groups",
    "parse_shape",
    "parse_sharding",
    "parse_source_target_pairs",
    "permute_groups",
    "unquote",
]
