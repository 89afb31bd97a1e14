"""The book's regimes beside the whole-step link model: whether every FSDP/tensor mix is
network-bound, and whether a data x model plan (weights replicated over ``data``) still is not.

"How to Scale Your Model" (training.md, "What's the right combination of FSDP and MP?") counts
the forward pass of an MLP block mixed over FSDP (``X``) and tensor parallelism (``Y``) and finds
every mix comms-bound below ``4 alpha^2 / (F M_X M_Y)`` tokens per chip, ``alpha = C / W_ici``
and ``M_X``, ``M_Y`` the torus axes each mesh axis spans (on a 3D torus at best 2 and 1). The
search prices the whole step instead: FSDP moves each weight three times, a Megatron pair's
activations four times, and data parallelism over replicated weights moves them once (the
gradient all-reduce), so a data x model plan can stay compute-bound below the book's bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..plan.estimate import program_slices
from ..plan.hardware import Hardware
from ..text.ranges import format_bytes
from .cost import Cost, _MeshOnly, _MeshSizes
from .space import Leaf, Plan


@dataclass(frozen=True)
class Regime:
    """What the book and the link model say of the step's FSDP/tensor mixes and data x model plans."""

    tokens_per_chip: float
    d_ff: int | None  # the book's F: the widest dimension of the parameters' matrices past d_model
    alpha: float | None  # C / W_ici (W both directions of one link), TPUs only
    torus_axes: int  # the slice's torus dimensions longer than 1
    book_bound: float | None  # 4 alpha^2 / (F M_X M_Y), tokens per chip; None where it does not apply
    network_bound_mixes: bool | None  # the book's claim: tokens per chip below its bound and pure FSDP's
    compute_bound_mixes: tuple[str, ...]  # FSDP/tensor mixes the whole-step link model finds compute-bound
    data_model_plan: str | None  # the fastest compute-bound plan with weights replicated over data
    data_model_extra_bytes: int  # what its replicated weights hold per chip past the same mesh as FSDP
    fsdp_bound: float | None = None  # alpha / (the slice's torus axes): pure FSDP over all of them (training.md)

    @property
    def m_x_m_y(self) -> int:
        """The book's best ``M_X M_Y``: the torus axes split between FSDP and tensor parallelism."""
        return (self.torus_axes // 2) * (self.torus_axes - self.torus_axes // 2)

    def sentences(self) -> list[str]:
        """The verdict's lines on the book's bound and the data x model plan, each saying why."""
        out = []
        if self.book_bound is not None and self.network_bound_mixes is not None:
            m_x = self.torus_axes - self.torus_axes // 2
            lowest = min(self.book_bound, self.fsdp_bound or self.book_bound)
            claim = "below both" if self.network_bound_mixes else f"at or above {lowest:.0f}"
            said = (
                "every FSDP/tensor mix is network-bound"
                if self.network_bound_mixes
                else "the best FSDP/tensor mix can be compute-bound"
            )
            fsdp = (
                ""
                if self.fsdp_bound is None
                else f" and pure FSDP's over the slice's {self.torus_axes} torus axes, alpha / {self.torus_axes} = "
                f"{self.fsdp_bound:.0f}"
            )
            out.append(
                f"the book (training.md, 'What's the right combination of FSDP and MP?'): {said}; its bound "
                f"4 alpha^2 / (F M_X M_Y) = {self.book_bound:.0f} tokens per chip (alpha = {self.alpha:.0f}, "
                f"F = {self.d_ff}, M_X = {m_x}, M_Y = {self.torus_axes // 2}){fsdp}: this step has "
                f"{self.tokens_per_chip:.0f}, {claim}"
            )
            if self.network_bound_mixes and self.compute_bound_mixes:
                out.append(
                    f"the whole-step link model still finds {', '.join(self.compute_bound_mixes)} compute-bound: "
                    "the book counts the forward pass, where compute triples over a whole step and a Megatron "
                    "pair's activations only double"
                )
        if self.data_model_plan is not None:
            out.append(
                f"{self.data_model_plan} (weights replicated over data) is compute-bound: it moves its weights "
                "once a step (the gradient all-reduce) where FSDP moves them three times, and holds "
                f"{format_bytes(self.data_model_extra_bytes)} more per chip"
            )
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "tokens_per_chip": self.tokens_per_chip,
            "d_ff": self.d_ff,
            "alpha": self.alpha,
            "book_bound": self.book_bound,
            "fsdp_bound": self.fsdp_bound,
            "network_bound_mixes": self.network_bound_mixes,
            "compute_bound_mixes": list(self.compute_bound_mixes),
            "data_model_plan": self.data_model_plan,
            "data_model_extra_bytes": self.data_model_extra_bytes,
        }


def d_ff_of(leaves: Sequence[Leaf], width: int | None) -> int | None:
    """The book's ``F``: the widest dimension of a parameter matrix that meets d_model."""
    wide = [d for leaf in leaves if leaf.role == "param" and len(leaf.shape) >= 2 and width in leaf.shape[-2:]
            for d in leaf.shape[-2:] if d != width]  # fmt: skip
    return max(wide, default=None)


def is_mix(plan: Plan) -> bool:
    """An FSDP/tensor mix, the book's slice of the space: no axis replicates the weights over the batch."""
    return plan.sizes["data"] == 1 and plan.sizes["sequence"] == 1


def is_data_model(plan: Plan) -> bool:
    """Weights replicated over ``data`` (no FSDP): data parallelism, with tensor parallelism or not."""
    return plan.sizes["data"] > 1 and plan.sizes["fsdp"] == 1


def replicated_extra_bytes(plan: Plan) -> int:
    """What the parameters hold per chip past the same mesh with ``data`` as FSDP (each split ``data`` more)."""
    data = plan.sizes["data"]
    held = [s.leaf.nbytes // s.split(plan.sizes) for s in plan.strategies if s.leaf.role == "param"]
    return sum(b - b // data for b in held)


def torus_axes(devices: int, hw: Hardware) -> int:
    """The dimensions longer than 1 of the slice ``devices`` chips take (0 on GPUs)."""
    slices = program_slices(_MeshOnly(_MeshSizes((devices,)), devices), hw)  # type: ignore[arg-type]
    return 0 if slices is None else sum(d > 1 for d in slices.topology)


def regime(
    plans: Sequence[Plan],
    costs: Mapping[str, Cost],
    traced_bounds: Mapping[str, str],
    leaves: Sequence[Leaf],
    width: int | None,
    tokens: float,
    devices: int,
    hw: Hardware,
) -> Regime:
    """The book's bound for this step and slice, and what the link model finds of the plans it names
    (a traced plan by its traced row, the others by their analytic cost)."""
    d_ff = d_ff_of(leaves, width)
    axes = torus_axes(devices, hw)
    alpha = None if hw.switch else hw.flops_per_s / (2 * hw.link_bytes_per_s)
    split = (axes // 2) * (axes - axes // 2)
    per_chip = tokens / devices
    bound = None if alpha is None or not d_ff or not split else 4 * alpha**2 / (d_ff * split)

    def bound_of(p: Plan) -> str:
        return traced_bounds.get(p.name, costs[p.name].bound)

    mixes = tuple(p.name for p in plans if is_mix(p) and p.name in costs and bound_of(p) == "compute")
    replicated = [p for p in plans if is_data_model(p) and p.name in costs and bound_of(p) == "compute"]
    best = min(replicated, key=lambda p: (costs[p.name].step_s, p.name), default=None)
    fsdp_bound = None if alpha is None or not axes else alpha / axes
    # below the mixed bound, and below pure FSDP's where F is small enough that it comes first
    claim = None if bound is None else per_chip < min(bound, fsdp_bound or bound)
    if not (claim or (claim is None and not mixes)):
        best = None  # a compute-bound mix is the book's answer; the replicated plan is no news there
    return Regime(
        per_chip,
        d_ff,
        alpha,
        axes,
        bound,
        claim,
        mixes,
        None if best is None else best.name,
        0 if best is None else replicated_extra_bytes(best),
        fsdp_bound,
    )
