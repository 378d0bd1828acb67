"""Theoretical occupancy: how many blocks of a kernel one SM holds, from its resources and the target's limits.

The rules are those of NVIDIA's occupancy calculator (``cuda_occupancy.h``):
registers are allocated per warp in units of 256 from one of the SM's
register-file partitions, shared memory per block in units of 128 bytes plus
what the system reserves, and an SM holds at most so many threads and blocks
(the architecture's :class:`~gpulab.compiler.target.SMLimits`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .target import Target

WARP = 32
REGISTER_UNIT = 256  # registers per warp are allocated in these units
SHARED_UNIT = 128


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks of one kernel per SM, the share of the SM's warps they fill, and what limits them."""

    blocks_per_sm: int
    fraction: float
    limited_by: str

    def as_dict(self) -> dict:
        """The fields as the view's bundle carries them."""
        return {"blocks_per_sm": self.blocks_per_sm, "occupancy": round(self.fraction, 4),
                "occupancy_limit": self.limited_by}


def occupancy(target: Target, block_threads: int, registers: int, shared_bytes: int) -> Occupancy:
    """Theoretical occupancy of a kernel launched in blocks of ``block_threads`` on ``target``."""
    limits = target.limits
    warps = -(-block_threads // WARP)
    registers_per_warp = -(-max(registers, 1) * WARP // REGISTER_UNIT) * REGISTER_UNIT
    shared = -(-(shared_bytes + limits.shared_reserved) // SHARED_UNIT) * SHARED_UNIT
    candidates = {
        "threads": limits.threads // (warps * WARP),
        "blocks": limits.blocks,
        "registers": (limits.register_partitions * (limits.registers // limits.register_partitions
                                                    // registers_per_warp) // warps),
        "shared memory": limits.shared_bytes // shared if shared else limits.blocks,
    }
    limited_by = min(candidates, key=candidates.get)
    blocks = candidates[limited_by]
    return Occupancy(blocks, blocks * warps * WARP / limits.threads, limited_by)
