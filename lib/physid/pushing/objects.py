"""Objects made of square cells (§3 of Song & Boularias): geometry, masses and frictions.

An object is a 4-connected set of ``k`` square cells of side ``a`` drawn on a grid; cell ``i``
has its own mass ``M_i`` and friction coefficient ``μ_i`` with the table. Cell centres are in
metres in the object frame, whose origin is the centroid of the cell centres; grid column ``c``
runs along +x and grid row ``r`` along −y, so an ASCII drawing reads as the top view.

The five objects of §7.2–7.3 (hammer, crimp, ranch = wrench, toolbox, book) are drawn in
``data/objects/<name>.txt``: a small header, one ``material`` line per letter (mass per cell in
kg, friction coefficient, description) and the grid, ``.`` for empty and a material letter for
a cell. ``data/objects/README.md`` explains each drawing.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from physid.core.validate import check_count, check_positive, check_tensor

__all__ = ["OBJECT_NAMES", "CellObject", "from_mask", "load_object", "object_names", "rectangle"]

DATA_DIR = Path(__file__).resolve().parents[3] / "data" / "objects"


def object_names(data_dir: Path | str | None = None) -> tuple[str, ...]:
    """The names of the objects in ``data_dir`` (``data/objects/``): every ``<name>.txt``, in
    the order of their ``order`` lines (the paper's order, §7.2–7.3), then by name."""
    folder = Path(data_dir or DATA_DIR)
    ranked = []
    for path in sorted(folder.glob("*.txt")):
        order = None
        for line in path.read_text().splitlines():
            words = line.split("#", 1)[0].split()
            if words[:1] == ["order"]:
                order = float(words[1])
            if words[:1] == ["grid"]:
                break
        ranked.append((order is None, order or 0.0, path.stem))
    return tuple(name for _, _, name in sorted(ranked))


#: The objects of ``data/objects/`` (the five of §7.2–7.3), in the paper's order: adding a
#: file there adds an object to every chapter and test.
OBJECT_NAMES = object_names()
_NEIGHBOURS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def _as_vector(name: str, values: Tensor | Sequence[float] | float, k: int) -> Tensor:
    """``values`` as a float64 (k,) tensor: a number is repeated for every cell; a tensor must
    already be float64 (TypeError otherwise), so float32 input is not silently mixed in."""
    if isinstance(values, Tensor):
        check_tensor(name, values, shape=None, dtype=torch.float64, finite=False)
        t = values
    else:
        try:
            t = torch.as_tensor(np.asarray(values, dtype=float), dtype=torch.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} must be a number or a sequence of numbers, got {values!r}"
            ) from None
    if t.dim() == 0:
        t = t.expand(k).clone()
    if tuple(t.shape) != (k,):
        raise ValueError(f"{name} must have shape ({k},), got {tuple(t.shape)}")
    return t


def check_masses(masses: Tensor, name: str = "masses") -> Tensor:
    """``masses`` if it is a float64 tensor of positive, finite values; else a ValueError (or a
    TypeError for another kind or dtype) naming ``name`` and the first bad value."""
    return check_tensor(name, masses, dtype=torch.float64, positive=True)


def check_frictions(
    frictions: Tensor, name: str = "frictions", high: float | None = None
) -> Tensor:
    """``frictions`` if it is a float64 tensor of finite values >= 0 (and <= ``high`` when
    given); else a ValueError (or a TypeError) naming ``name`` and the first bad value."""
    check_tensor(name, frictions, dtype=torch.float64, nonnegative=True)
    if high is not None and bool((frictions > high).any()):
        bad = frictions[frictions > high].flatten()[0].item()
        raise ValueError(f"{name} must be <= {high:g}, found {bad}")
    return frictions


def check_object(obj: object, name: str = "obj") -> CellObject:
    """``obj`` if it is a :class:`CellObject`; else a TypeError naming ``name``."""
    if not isinstance(obj, CellObject):
        raise TypeError(f"{name} must be a CellObject, got {type(obj).__name__}")
    return obj


def _check_connected(grid: np.ndarray) -> None:
    cells = {tuple(rc) for rc in grid.tolist()}
    if len(cells) != len(grid):
        raise ValueError("mask has repeated cells")
    seen, stack = {next(iter(cells))}, [next(iter(cells))]
    while stack:
        r, c = stack.pop()
        for dr, dc in _NEIGHBOURS:
            nb = (r + dr, c + dc)
            if nb in cells and nb not in seen:
                seen.add(nb)
                stack.append(nb)
    if len(seen) != len(cells):
        raise ValueError(
            f"mask is not 4-connected: {len(cells) - len(seen)} of {len(cells)} cells are "
            f"disconnected from cell {next(iter(cells))}"
        )


@dataclass(frozen=True, eq=False)
class CellObject:
    """A rigid object of ``k`` square cells with per-cell mass and friction (§3, §7.2).

    ``grid`` holds each cell's (row, column); ``centres`` (k, 2) are metres in the object frame
    (centred on the centroid); ``masses`` (k,) kg; ``frictions`` (k,) Coulomb coefficients with
    the table; ``regions`` names each cell's material.
    """

    name: str
    cell_side: float
    grid: np.ndarray
    masses: Tensor
    frictions: Tensor
    regions: tuple[str, ...] = ()
    centres: Tensor = field(init=False)

    def __post_init__(self) -> None:
        grid = np.asarray(self.grid, dtype=np.int64)
        if grid.ndim != 2 or grid.shape[1] != 2 or len(grid) == 0:
            raise ValueError(f"grid must be a non-empty (k, 2) array, got shape {grid.shape}")
        cell_side = check_positive("cell_side", self.cell_side)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {self.name!r}")
        _check_connected(grid)
        k = len(grid)
        masses = _as_vector("masses", self.masses, k)
        frictions = _as_vector("frictions", self.frictions, k)
        check_masses(masses)
        check_frictions(frictions)
        if self.regions and len(self.regions) != k:
            raise ValueError(f"regions must name {k} cells, got {len(self.regions)}")
        xy = np.stack([grid[:, 1] + 0.5, -(grid[:, 0] + 0.5)], axis=1) * cell_side
        centres = torch.as_tensor(xy - xy.mean(axis=0), dtype=torch.float64)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "cell_side", cell_side)
        object.__setattr__(self, "masses", masses)
        object.__setattr__(self, "frictions", frictions)
        object.__setattr__(self, "regions", tuple(self.regions))
        object.__setattr__(self, "centres", centres.to(masses.device))

    def __len__(self) -> int:
        return len(self.grid)

    @property
    def inertias(self) -> Tensor:
        """Moment of inertia of each cell about its centre, ``M_i a² / 6`` (a square of side a)."""
        return self.masses * self.cell_side**2 / 6.0

    def with_params(
        self, masses: Tensor | None = None, frictions: Tensor | None = None
    ) -> CellObject:
        """The same shape with other masses and/or frictions (validated)."""
        return replace(
            self,
            masses=self.masses if masses is None else masses,
            frictions=self.frictions if frictions is None else frictions,
        )

    def to(self, device: torch.device | str) -> CellObject:
        """The object with its tensors on ``device``."""
        return replace(self, masses=self.masses.to(device), frictions=self.frictions.to(device))

    def region_mask(self, region: str) -> Tensor:
        """Boolean (k,) mask of the cells of material ``region``."""
        if region not in self.regions:
            raise ValueError(f"region must be one of {sorted(set(self.regions))}, got {region!r}")
        return torch.tensor([r == region for r in self.regions], device=self.masses.device)

    def rectangles(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells merged into non-overlapping axis-aligned rectangles that cover exactly the
        object's footprint: centres (R, 2) and half sizes (R, 2), metres, object frame.

        Each grid row is split into runs of adjacent cells, and a run continues the rectangle
        of the same run in the row above (a greedy cover, not always the smallest)."""
        runs: dict[int, list[tuple[int, int]]] = {}
        for r in np.unique(self.grid[:, 0]):
            cols = np.sort(self.grid[self.grid[:, 0] == r, 1])
            breaks = np.nonzero(np.diff(cols) > 1)[0]
            starts = np.concatenate([[0], breaks + 1])
            ends = np.concatenate([breaks, [len(cols) - 1]])
            runs[int(r)] = [(int(cols[a]), int(cols[b])) for a, b in zip(starts, ends, strict=True)]
        boxes: list[tuple[int, int, int, int]] = []  # first row, last row, first col, last col
        growing: dict[tuple[int, int], int] = {}  # run -> index in boxes, if it reached row r − 1
        for r, row_runs in runs.items():
            ongoing = {}
            for run in row_runs:
                index = growing.get(run)
                if index is not None and boxes[index][1] == r - 1:
                    boxes[index] = (boxes[index][0], r, *run)
                else:
                    boxes.append((r, r, *run))
                    index = len(boxes) - 1
                ongoing[run] = index
            growing = ongoing
        b = np.array(boxes, dtype=float)
        a = self.cell_side
        origin = self.centres[0].cpu().numpy() - np.array([self.grid[0, 1], -self.grid[0, 0]]) * a
        centres = origin + np.stack([(b[:, 2] + b[:, 3]) / 2, -(b[:, 0] + b[:, 1]) / 2], 1) * a
        halves = np.stack([b[:, 3] - b[:, 2] + 1, b[:, 1] - b[:, 0] + 1], 1) * a / 2
        return centres, halves

    def memo(self, name: Hashable, make):
        """``make()``, computed once per object and kept under ``name`` (read-only arrays): for
        what depends only on the object's shape, which does not change."""
        cache = self.__dict__.setdefault("_memo", {})
        if name not in cache:
            value = make()
            for array in value if isinstance(value, tuple) else (value,):
                if isinstance(array, np.ndarray):
                    array.flags.writeable = False
            cache[name] = value
        return cache[name]

    def exposed_faces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cell faces on the outer boundary: ``(cell index (F,), midpoint (F, 2), inward normal
        (F, 2))`` in the object frame. Faces of holes (empty cells enclosed by the object) are
        not on the outer boundary. Computed once per object (read-only arrays)."""
        return self.memo("exposed_faces", self._exposed_faces)

    def _exposed_faces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, cols = self.grid[:, 0], self.grid[:, 1]
        r0, c0 = rows.min() - 1, cols.min() - 1
        occupied = np.zeros((rows.max() - r0 + 2, cols.max() - c0 + 2), dtype=bool)
        occupied[rows - r0, cols - c0] = True
        outside = np.zeros_like(occupied)
        outside[0, 0] = True
        stack = [(0, 0)]
        while stack:
            r, c = stack.pop()
            for dr, dc in _NEIGHBOURS:
                nr, nc = r + dr, c + dc
                inside = 0 <= nr < occupied.shape[0] and 0 <= nc < occupied.shape[1]
                if inside and not occupied[nr, nc] and not outside[nr, nc]:
                    outside[nr, nc] = True
                    stack.append((nr, nc))
        centres = self.centres.cpu().numpy()
        half = self.cell_side / 2
        index, mids, normals = [], [], []
        for i, (r, c) in enumerate(zip(rows - r0, cols - c0, strict=True)):
            for dr, dc in _NEIGHBOURS:
                if outside[r + dr, c + dc]:
                    outward = np.array([dc, -dr], dtype=float)  # row runs along −y
                    index.append(i)
                    mids.append(centres[i] + half * outward)
                    normals.append(-outward)
        return np.array(index), np.array(mids), np.array(normals)


def from_mask(
    mask: np.ndarray | Sequence[Sequence[bool]],
    cell_side: float,
    masses: Tensor | Sequence[float] | float,
    frictions: Tensor | Sequence[float] | float,
    name: str = "object",
    regions: Sequence[str] = (),
) -> CellObject:
    """A :class:`CellObject` from a boolean mask (rows top to bottom); cells in row-major order.

    ``masses``/``frictions`` are one value per cell in that order, or a scalar for all cells.
    ValueError for an empty or disconnected mask and for bad masses or frictions.
    """
    grid_mask = np.asarray(mask)
    if grid_mask.ndim != 2:
        raise ValueError(f"mask must be a 2-D boolean grid, got shape {grid_mask.shape}")
    if grid_mask.dtype != bool:
        if grid_mask.dtype.kind not in "iuf" or not np.isin(grid_mask, (0, 1)).all():
            raise ValueError(f"mask must hold only booleans (or 0 and 1), got {mask!r}")
        grid_mask = grid_mask.astype(bool)
    if not grid_mask.any():
        raise ValueError(f"mask is empty: no cell is set in the {grid_mask.shape} grid")
    grid = np.argwhere(grid_mask)
    return CellObject(name, cell_side, grid, masses, frictions, tuple(regions))


def rectangle(
    rows: int, cols: int, cell_side: float, mass: float, friction: float, name: str = "rectangle"
) -> CellObject:
    """A uniform ``rows × cols`` rectangle of cells."""
    shape = (check_count("rows", rows), check_count("cols", cols))
    return from_mask(np.ones(shape, bool), cell_side, mass, friction, name)


def load_object(name: str, data_dir: Path | str | None = None) -> CellObject:
    """One of :data:`OBJECT_NAMES` with its ground-truth masses and frictions, read from
    ``data/objects/<name>.txt`` (or ``data_dir``)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be one of {OBJECT_NAMES}, got {name!r}")
    path = Path(data_dir or DATA_DIR) / f"{name}.txt"
    if not path.is_file():
        raise ValueError(f"name must be one of {OBJECT_NAMES} (no file {path}), got {name!r}")
    header, materials, grid_lines = {}, {}, []
    lines = iter(path.read_text().splitlines())
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "grid":
            grid_lines = [ln.rstrip() for ln in lines if ln.strip()]
            break
        if words[0] == "material":
            materials[words[1]] = (float(words[2]), float(words[3]))
        else:
            header[words[0]] = words[1]
    width = max(len(ln) for ln in grid_lines)
    chars = np.array([list(ln.ljust(width, ".")) for ln in grid_lines])
    unknown = set(chars.flatten()) - set(materials) - {"."}
    if unknown:
        raise ValueError(f"{path}: grid letters {sorted(unknown)} have no material line")
    cells = np.argwhere(chars != ".")
    letters = [str(chars[r, c]) for r, c in cells]
    return from_mask(
        chars != ".",
        float(header["cell_side"]),
        [materials[ch][0] for ch in letters],
        [materials[ch][1] for ch in letters],
        header.get("name", name),
        letters,
    )
