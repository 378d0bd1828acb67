"""The portable tree's GPU order, modelled on the CPU: any tile shape gives the host's bits.

A model, in Python, of what ``order="portable"`` builds run (templates/order.cu,
the reduce's groups of tiles and fold_blocks, the scan's threads' tree and
Fenwick look-back): each function mirrors the template function of its name,
step for step (the lanes of a shuffle, the pushes of a binary counter, the
captures of F(count)'s blocks, the look-back's groups). Run with tiles and
threads of other sizes, as other targets, element types and block counts cut
the work, it must give the host replay's bits (gpulab/host/portable.py),
which is what makes the result the same on every GPU. A float32 sum whose
items span six orders of magnitude shows any other grouping.
"""

import numpy as np
import pytest

import gpulab

WARP = 32


def add(a, b):
    return a + b


def _items(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)


def log2(n):
    return n.bit_length() - 1


# --- order.cu ----------------------------------------------------------------------------------------------------
def pairwise(op, x):
    x = list(x)
    s = 1
    while s < len(x):
        for j in range(0, len(x), 2 * s):
            x[j] = op(x[j], x[j + s])
        s *= 2
    return x[0]


def push(op, stack, k, value, take):
    carry, level = value, 0
    while level + 1 < len(stack) and k >> level & 1:
        carry = op(stack[level], carry)
        level += 1
    if take:
        stack[level] = carry


def shuffle_levels(op, x, levels, on_level=None):
    """The shuffle_down tree of ``x`` (one value per lane) for ``levels`` levels, lanes updated at once; after
    level l, ``on_level(l, x)``."""
    x = list(x)
    for level in range(1, levels + 1):
        d = 1 << (level - 1)
        x = [op(v, x[lane + d] if lane + d < len(x) else v) if lane % (2 * d) == 0 else v for lane, v in enumerate(x)]
        if on_level:
            on_level(level, x)
    return x


def fold_blocks(op, value, count, P, threads, acc, has):
    item_levels, thread_levels = log2(P), log2(threads)
    blocks, last, totals = {}, count - 1, []
    for t in range(threads):
        first = t * P
        mine = 0 if count <= first else min(P, count - first)
        x = [value(min(first + j, last)) for j in range(P)]
        stack = [x[0]] * (item_levels + 1)
        for j in range(P):
            push(op, stack, j, x[j], j < mine)
        totals.append(stack[item_levels])
        if 0 < mine < P:
            for level in range(item_levels):
                if mine >> level & 1:
                    blocks[level] = stack[level]
    full = count // P
    if full & 1:
        blocks[item_levels] = totals[full - 1]
    warp_totals = []
    for w in range(threads // WARP):
        def capture(level, x, w=w):
            start = (full >> (level + 1)) << (level + 1)
            if full >> level & 1 and w * WARP <= start < (w + 1) * WARP:
                blocks[item_levels + level] = x[start - w * WARP]
        warp_totals.append(shuffle_levels(op, totals[w * WARP:(w + 1) * WARP], 5, capture)[0])

    def capture_warps(level, x):
        start = (full >> (level + 6)) << (level + 6)
        if full >> (level + 5) & 1 and start % WARP == 0 and start // WARP < len(x):
            blocks[item_levels + level + 5] = x[start // WARP]
    shuffle_levels(op, warp_totals, thread_levels - 5, capture_warps)
    for level in range(item_levels + thread_levels, -1, -1):
        if count >> level & 1:
            acc = op(acc, blocks[level]) if has else blocks[level]
            has = True
    return acc, has


def up_sweep(op, x):
    s = 1
    while s < len(x):
        for j in range(2 * s - 1, len(x), 2 * s):
            x[j] = op(x[j - s], x[j])
        s *= 2


def down_sweep(op, x, before, has):
    x[-1] = before
    s = len(x) // 2
    while s >= 1:
        for j in range(2 * s - 1, len(x), 2 * s):
            left = x[j - s]
            x[j - s] = x[j]
            joined = op(x[j], left)
            x[j] = left if j == 2 * s - 1 and not has else joined
        s //= 2


def node_offset(threads, level):
    return threads - (threads >> level)


def build_thread_tree(op, values, threads):
    """``(nodes, total)``: the left children of the threads' tree, as build_thread_tree stores them."""
    levels = log2(threads)
    nodes = [None] * threads
    for t in range(0, threads, 2):
        nodes[t >> 1] = values[t]
    warp_totals = []
    for w in range(threads // WARP):
        def store(level, x, w=w):
            for lane in range(WARP):
                t = w * WARP + lane
                if level < levels and t % (2 << level) == 0:
                    nodes[node_offset(threads, level) + (t >> (level + 1))] = x[lane]
        warp_totals.append(shuffle_levels(op, values[w * WARP:(w + 1) * WARP], 5, store)[0])

    def store_warps(level, x):
        level += 5
        for lane in range(len(x)):
            if level < levels and lane % (2 << (level - 5)) == 0:
                nodes[node_offset(threads, level) + (lane >> (level - 4))] = x[lane]
    total = shuffle_levels(op, warp_totals, levels - 5, store_warps)[0]
    return nodes, total


def thread_prefix(op, nodes, threads, q, before, has):
    for level in range(log2(threads) - 1, -1, -1):
        if q >> level & 1:
            node = nodes[node_offset(threads, level) + (q >> (level + 1))]
            before = op(before, node) if has else node
            has = True
    return before, has


def scan_row(op, row, nodes, threads, t, before, has_before, after, initial, exclusive):
    mine, has = thread_prefix(op, nodes, threads, t, before, has_before)
    following = thread_prefix(op, nodes, threads, t + 1, before, has_before)[0] if t + 1 < threads else after
    down_sweep(op, row, mine if has else row[-1], has)
    found = []
    for j in range(len(row)):
        folded = row[j] if exclusive else (row[j + 1] if j + 1 < len(row) else following)
        none = exclusive and j == 0 and not has
        found.append(folded if initial is None else initial if none else op(initial, folded))
    return found


# --- fenwick.cu ---------------------------------------------------------------------------------------------------
def fenwick_look_back(op, groups, b, aggregate):
    """Publish G(b) in ``groups`` (tile number -> G) from ``aggregate``; return (F before b, whether any, F after)."""
    own = (~b & (b + 1)).bit_length() - 1  # the trailing ones of b
    window = {i: groups[(b >> i << i) - 1] for i in range(b.bit_length()) if b >> i & 1}
    g = aggregate
    for j in range(own):
        g = op(window[j], g)
    groups[b] = g
    before, has, after, has_after = g, False, g, False
    for j in range(b.bit_length() - 1, -1, -1):
        if b >> j & 1:
            before = op(before, window[j]) if has else window[j]
            has = True
            if j > own:
                after, has_after = before, True
    return before, has, op(after, g) if has_after else g


# --- segments.cu, pieces.cu, reduce_by_key.cu ------------------------------------------------------------------
HAS, RESET = 1, 2


def join(op, a, b):
    """Pieces ``(value, flags)`` in order (segments.cu)."""
    joined = op(a[0], b[0])
    both = a[1] & b[1] & HAS and not b[1] & RESET
    value = joined if both else (b[0] if b[1] & (HAS | RESET) else a[0])
    return value, b[1] if b[1] & RESET else a[1] | b[1]


def join_runs(op, a, b):
    """``(starts, piece)`` in order (reduce_by_key.cu)."""
    return a[0] + b[0], join(op, a[1], b[1])


def starts_among(starts, first, count):
    return (starts >> first) & ((1 << count) - 1) != 0


def up_sweep_pieces(op, x, starts, mine):
    s = 1
    while s < len(x):
        for j in range(2 * s - 1, len(x), 2 * s):
            joined = op(x[j - s], x[j])
            x[j] = x[j - s] if j - s + 1 >= mine else (x[j] if starts_among(starts, j - s + 1, s) else joined)
        s *= 2


def down_sweep_pieces(op, x, before, has, starts, mine):
    x[-1] = before
    s = len(x) // 2
    while s >= 1:
        for j in range(2 * s - 1, len(x), 2 * s):
            parent = j - 2 * s + 1
            parent_has = has or (parent > 0 and mine > 0)
            left = x[j - s]
            x[j - s] = x[j]
            joined = op(x[j], left)
            x[j] = left if starts_among(starts, parent, s) or not parent_has else joined
        s //= 2


def reduce_by_key_model(op, keys, items, threads, S):
    """gpulab_reduce_by_key (PORTABLE_ORDER): ``(run keys, run folds)``."""
    n, tile = len(items), threads * S
    joined = lambda a, b: join_runs(op, a, b)  # noqa: E731
    out, out_keys, groups, total_runs = {}, {}, {}, None
    for b in range(-(-n // tile)):
        base = b * tile
        count = min(tile, n - base)
        threads_rows = []
        for t in range(threads):
            first = t * S
            mine = max(0, min(S, count - first))
            starts = 0
            for j in range(mine):
                p = base + first + j
                if p == 0 or keys[p] != keys[p - 1]:
                    starts |= 1 << j
            row = [items[base + first + j] if first + j < count else items[base] for j in range(S)]
            up_sweep_pieces(op, row, starts, mine)
            threads_rows.append((row, starts, mine))
        totals = [(bin(starts).count("1"), (row[-1], (HAS if mine else 0) | (RESET if starts else 0)))
                  for row, starts, mine in threads_rows]
        nodes, total = build_thread_tree(joined, totals, threads)
        before, has_before, after = fenwick_look_back(joined, groups, b, total)
        for t, (row, starts, mine) in enumerate(threads_rows):
            carry, has = thread_prefix(joined, nodes, threads, t, before, has_before)
            following = thread_prefix(joined, nodes, threads, t + 1, before, has_before)[0] if t + 1 < threads \
                else after
            down_sweep_pieces(op, row, carry[1][0] if has else row[-1], has and bool(carry[1][1] & HAS), starts,
                              mine)
            run = carry[0] if has else 0
            for j in range(mine):
                if starts >> j & 1:
                    if run > 0:
                        out[run - 1] = row[j]
                    out_keys[run] = keys[base + t * S + j]
                    run += 1
            if mine and base + t * S + mine == n:
                out[run - 1] = row[mine] if mine < S else following[1][0]
                total_runs = run
    return [out_keys[r] for r in range(total_runs)], [out[r] for r in range(total_runs)]


def segmented_reduce_model(op, items, offsets, initial, threads, S):
    """gpulab_segmented_reduce (PORTABLE_ORDER): one value per segment (valid offsets)."""
    n, tile, segments = len(items), threads * S, len(offsets) - 1
    joined = lambda a, b: join(op, a, b)  # noqa: E731
    begin, end = offsets[0], offsets[-1]
    start_positions = {offsets[k] for k in range(segments) if offsets[k] < offsets[k + 1]} | {end}
    out, groups = [initial] * segments, {}
    ends = {offsets[k + 1]: k for k in range(segments) if offsets[k] < offsets[k + 1]}  # a segment by its end
    for b in range(max(1, -(-n // tile))):
        base = b * tile
        count = max(0, min(tile, n - base))
        threads_rows = []
        for t in range(threads):
            f = base + t * S
            mine = max(0, min(S, n - f))
            low, high = max(f, min(max(base, begin), end)), min(f + S, max(min(base + tile, end), begin))
            starts = sum(1 << (p - f) for p in range(low, min(high + 1, f + S)) if low < high and p in start_positions)
            row = [items[base + t * S + j] if t * S + j < count else (items[base] if count else initial)
                   for j in range(S)]
            up_sweep_pieces(op, row, starts, mine)
            threads_rows.append((row, starts, mine, low, high, f))
        totals = [(row[-1], (HAS if mine else 0) | (RESET if starts else 0)) for row, starts, mine, *_ in threads_rows]
        nodes, total = build_thread_tree(joined, totals, threads)
        before, has_before, after = fenwick_look_back(joined, groups, b, total)
        for t, (row, starts, mine, low, high, f) in enumerate(threads_rows):
            carry, has = thread_prefix(joined, nodes, threads, t, before, has_before)
            following = thread_prefix(joined, nodes, threads, t + 1, before, has_before)[0] if t + 1 < threads \
                else after
            down_sweep_pieces(op, row, carry[0] if has else row[-1], has and bool(carry[1] & HAS), starts, mine)
            for p in range(low + 1, high + 1) if low < high else ():
                if p in ends:
                    out[ends[p]] = op(initial, row[p - f] if p < f + S else following[0])
    return out


# --- the kernels --------------------------------------------------------------------------------------------------
def reduce_model(op, items, initial, threads, vec, unroll, vectors=True):
    """gpulab_reduce (reduce.cu, PORTABLE_ORDER) with ``threads`` a block, ``vec`` items a vector, ``unroll`` rows."""
    n, P = len(items), vec * unroll
    tile = threads * P
    if n == 0:
        return initial

    def whole_tile(base):
        if not vectors:
            return fold_blocks(op, lambda i: items[base + i], tile, P, threads, None, False)[0]
        warps = []
        for w in range(threads // WARP):
            first = base + w * WARP * P
            stack = [None] * (log2(unroll) + 1)
            for k in range(unroll):
                lanes = [pairwise(op, items[first + (k * WARP + lane) * vec:][:vec]) for lane in range(WARP)]
                push(op, stack, k, shuffle_levels(op, lanes, 5)[0], True)
            warps.append(stack[log2(unroll)])
        return pairwise(op, warps)

    whole, tiles = n // tile, -(-n // tile)
    partials = [whole_tile(b * tile) for b in range(whole)]
    acc, has = None, False
    if tiles == 1:
        acc, has = (partials[0], True) if whole == 1 else (None, False)
    else:
        groups, whole_groups = -(-tiles // tile), whole // tile
        grouped = whole_groups * tile if groups > 1 else 0
        if groups > 1 and whole_groups:
            values = [fold_blocks(op, lambda i, g=g: partials[g * tile + i], tile, P, threads, None, False)[0]
                      for g in range(whole_groups)]
            acc, has = fold_blocks(op, lambda i: values[i], whole_groups, P, threads, acc, has)
        if whole > grouped:
            acc, has = fold_blocks(op, lambda i: partials[grouped + i], whole - grouped, P, threads, acc, has)
    if n > whole * tile:
        acc, has = fold_blocks(op, lambda i: items[whole * tile + i], n - whole * tile, P, threads, acc, has)
    return op(initial, acc) if has else initial


def scan_model(op, items, initial, exclusive, threads, S, small):
    """gpulab_scan (scan.cu, PORTABLE_ORDER) with ``threads`` a block, ``S`` items a thread, ``small`` items a
    thread of one short tile; the tiles' look-backs in tile order."""
    n, tile = len(items), threads * S
    out = [None] * n
    if n <= threads * small:
        rows = [[items[min(t * small + j, n - 1)] for j in range(small)] for t in range(threads)]
        for row in rows:
            up_sweep(op, row)
        nodes, total = build_thread_tree(op, [row[-1] for row in rows], threads)
        for t, row in enumerate(rows):
            found = scan_row(op, row, nodes, threads, t, row[0], False, total, initial, exclusive)
            for j in range(small):
                if t * small + j < n:
                    out[t * small + j] = found[j]
        return out
    groups = {}  # G(b): published by each tile
    for b in range(-(-n // tile)):
        base = b * tile
        count = min(tile, n - base)
        rows = [[items[base + k] if k < count else items[base] for k in range(t * S, (t + 1) * S)]
                for t in range(threads)]
        for row in rows:
            up_sweep(op, row)
        nodes, total = build_thread_tree(op, [row[-1] for row in rows], threads)
        before, has, after = fenwick_look_back(op, groups, b, total)
        for t, row in enumerate(rows):
            found = scan_row(op, row, nodes, threads, t, before, has, after, initial, exclusive)
            for j in range(S):
                if t * S + j < count:
                    out[base + t * S + j] = found[j]
    return out


# --- the model against the host -----------------------------------------------------------------------------------
REDUCE_SHAPES = [(64, 1, 2, True), (64, 2, 1, True), (128, 1, 1, False), (64, 4, 4, True)]  # threads, vec, rows
SCAN_SHAPES = [(64, 1, 1), (64, 4, 4), (128, 2, 2), (64, 8, 4)]  # threads, items a thread, small items


def _bits(values):
    return np.array(values, np.float32).tobytes()


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 1000, 16384, 16384 + 128 * 3 + 5, 40000])
def test_reduce_model_gives_the_hosts_bits_for_every_tile_shape(n):
    items = _items(n)
    initial = np.float32(0.25)
    want = gpulab.reduce(add, items, initial, device="host", order="portable")
    if n >= 1000:  # the items show another grouping: left to right gives other bits
        assert gpulab.reduce(add, items, initial, device="host").tobytes() != want.tobytes()
    for shape in REDUCE_SHAPES:
        got = reduce_model(add, list(items), initial, *shape)
        assert _bits([got]) == want.tobytes(), shape


@pytest.mark.parametrize("n", [1, 3, 64, 65, 256, 257, 4096, 4096 + 64 * 8 * 3 + 7])
def test_scan_model_gives_the_hosts_bits_for_every_tile_shape(n):
    items = _items(n, seed=1)
    initial = np.float32(-1.5)
    for exclusive, given in ((False, None), (False, initial), (True, initial)):
        want = gpulab.scan(add, items, given, exclusive=exclusive, device="host", order="portable")
        for shape in SCAN_SHAPES:
            got = scan_model(add, list(items), given, exclusive, *shape)
            assert _bits(got) == want.tobytes(), (exclusive, given, shape)


@pytest.mark.parametrize("n", [1, 5, 300, 5000])
def test_reduce_by_key_model_gives_the_hosts_bits_for_every_tile_shape(n):
    rng = np.random.default_rng(3)
    keys = np.cumsum(rng.random(n) < 1 / 30).astype(np.int32)
    keys[n // 2:] = np.cumsum(rng.random(n - n // 2) < 1 / 400) + 10**6  # long runs too, across tiles
    items = _items(n, seed=4)
    want_keys, want = gpulab.reduce_by_key(add, keys, items, device="host", order="portable")
    for threads, S in ((64, 1), (64, 4), (128, 8), (64, 16)):
        got_keys, got = reduce_by_key_model(add, list(keys), list(items), threads, S)
        assert np.array_equal(got_keys, want_keys) and _bits(got) == want.tobytes(), (threads, S)


@pytest.mark.parametrize("n", [0, 1, 300, 5000])
def test_segmented_reduce_model_gives_the_hosts_bits_for_every_tile_shape(n):
    rng = np.random.default_rng(5)
    cuts = [*rng.integers(0, n + 1, 40), *rng.integers(n // 3, n // 3 + 2, 3)] if n else []
    offsets = np.sort(np.array([min(7, n), *cuts, max(n - 3, min(7, n))], np.int64))  # not from 0 nor to n; empties
    items = _items(n, seed=6)
    initial = np.float32(0.75)
    want = gpulab.segmented_reduce(add, items, offsets, initial, device="host", order="portable")
    for threads, S in ((64, 1), (64, 4), (128, 8), (64, 32)):
        got = segmented_reduce_model(add, list(items), offsets.tolist(), initial, threads, S)
        assert _bits(got) == want.tobytes(), (threads, S)

