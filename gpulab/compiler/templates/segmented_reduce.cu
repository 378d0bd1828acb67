// ---- Segmented reduce: a fold per segment, in one pass with a look-back --------
// out[k] = initial op xs[offsets[k]] op ... op xs[offsets[k+1] - 1] for each of
// the S segments; an empty segment gives initial.
//
// Work is cut by items, not by segments: block b takes the b-th tile of
// SCAN_TILE items from the tile that holds offsets[0], so every block reads
// the same bytes whatever the segments' lengths (random lengths mix well).
// How a segment is folded follows from the offsets, at run time:
//   - a segment within one thread's SCAN_ITEMS items: by that thread alone,
//     which writes its result (a thread per segment);
//   - one that crosses threads of a tile: each folds its share, and the
//     block's scan of pieces (segments.cu) joins them in order (a block per
//     segment, for segments of up to a tile);
//   - one that crosses tiles: the look-back (lookback.cu, the scan's
//     deterministic window, here over pieces) brings the earlier tiles'
//     share to the tile where it ends (several blocks per segment, each
//     reading its tile at full speed, none waiting for a long segment).
// A thread whose items hold no segment start folds them in registers; the
// others walk them one by one. Which segments a tile touches, its threads
// find together (block_find_segments: 256 probes a round); each thread then
// searches among those few.
// Empty segments own no item: each block writes `initial` to its share of
// them, and checks its share of the offsets (in order, within 0..n); the
// first bad one is recorded in `bad` for the host to report.

// The segment offsets: S + 1 int32 or int64 values, any stride.
struct Offsets {
    const void* data;
    long long stride;  // in items
    int wide;          // 1: int64, 0: int32
};

__device__ __forceinline__ long long offset_at(const Offsets& offsets, long long k) {
    const long long at = k * offsets.stride;
    return offsets.wide ? static_cast<const long long*>(offsets.data)[at]
                        : (long long)static_cast<const int*>(offsets.data)[at];
}

// The last k in [low, high] with offsets[k] <= p (low when there is none).
// Every loop before the block's shuffles has a fixed bound (64 halvings of a
// 64-bit range here): without one ptxas cannot prove that a warp's threads
// meet again, and emulates the shuffles on sm_80-89 (common.cu).
__device__ __forceinline__ long long find_segment(const Offsets& offsets, long long low, long long high,
                                                  long long p) {
    #pragma unroll 1
    for (int halving = 0; halving < 64 && low < high; ++halving) {
        const long long middle = high - (high - low) / 2;
        if (offset_at(offsets, middle) <= p) low = middle; else high = middle - 1;
    }
    return low;
}

// The segments holding items p and q: the last k < segments with offsets[k]
// <= p (and <= q). The whole block searches at once: each round, thread t
// asks whether the answer lies at or past the t-th of 256 evenly spaced
// probes, and the count of yeses (one barrier) narrows the range 256 times.
// The count only covers probes inside the range, so even unsorted offsets
// leave the answer in [0, segments). The number of rounds follows from
// `segments` alone, a kernel parameter: a loop bound read from memory would
// be one ptxas cannot prove the same for a whole warp, and it would emulate
// the block's shuffles that come after it on sm_80-89 (common.cu).
__device__ __forceinline__ void block_find_segments(const Offsets& offsets, long long segments, long long p,
                                                    long long q, long long& at_p, long long& at_q) {
    static_assert(BLOCK_THREADS == 256, "a round narrows the range 256 times");
    const int rounds = segments > 1 ? (64 - __clzll(segments - 1) + 7) / 8 : 0;
    long long low_p = 0, size_p = segments, low_q = 0, size_q = segments;
    #pragma unroll 1
    for (int round = 0; round < rounds; ++round) {
        const long long step_p = (size_p + BLOCK_THREADS - 1) / BLOCK_THREADS;
        const long long step_q = (size_q + BLOCK_THREADS - 1) / BLOCK_THREADS;
        const long long probe_p = low_p + (threadIdx.x + 1) * step_p, probe_q = low_q + (threadIdx.x + 1) * step_q;
        const int yes_p = __syncthreads_count(probe_p < low_p + size_p && offset_at(offsets, probe_p) <= p);
        const int yes_q = __syncthreads_count(probe_q < low_q + size_q && offset_at(offsets, probe_q) <= q);
        low_p += yes_p * step_p;
        size_p = min(step_p, size_p - yes_p * step_p);
        low_q += yes_q * step_q;
        size_q = min(step_q, size_q - yes_q * step_q);
    }
    at_p = low_p;
    at_q = low_q;
}

// The segment of item p, which is where segment k + 1 starts: k + 1, unless
// empty segments start at p too (then the last of them, found by a search).
__device__ __forceinline__ long long segment_starting(const Offsets& offsets, long long k, long long p,
                                                      long long last) {
    if (k + 1 >= last || offset_at(offsets, k + 2) > p) return min(k + 1, last);
    return find_segment(offsets, k + 2, last, p);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_segmented_reduce(Input0 in, index_t n, Offsets offsets, long long segments, Output out,
                        TileStatus<Piece<value_t>> status, unsigned int epoch, value_t initial,
                        unsigned long long* bad, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    auto joined = [&](const Piece<value_t>& a, const Piece<value_t>& b) { return join(a, b, combine); };
    __shared__ alignas(16) value_t items[TILE_SLOTS];

    // The items the segments cover, [begin, end), clamped to the input: bad
    // offsets give wrong results, never a read or write out of place.
    const long long first_offset = offset_at(offsets, 0), last_offset = offset_at(offsets, segments);
    const long long begin = min(max(first_offset, 0ll), (long long)n);
    const long long end = min(max(last_offset, begin), (long long)n);
    // Every block takes the same path, even one past the last tile (with no
    // items, it publishes nothing but empty pieces): a branch on values read
    // from memory would be one ptxas cannot prove the same for a whole warp,
    // and it would emulate the shuffles after it on sm_80-89 (common.cu).
#if PORTABLE_ORDER
    const long long tile_base = (long long)blockIdx.x * SCAN_TILE;  // every tile from 0: the portable tree's blocks
                                                                    // are aligned to positions in the input
#else
    const long long tile_base = (begin / SCAN_TILE + (long long)blockIdx.x) * SCAN_TILE;  // 64 bits: past n
#endif
    const long long tile = blockIdx.x;
    const index_t base = (index_t)tile_base;
    const int count = (int)max(min((long long)SCAN_TILE, n - tile_base), 0ll);  // items loaded
    const index_t tile_low = (index_t)min(max(tile_base, begin), end);
    const index_t tile_high = (index_t)max(min(tile_base + SCAN_TILE, end), (long long)tile_low);
    // A whole tile's loads are issued first and stored after the search, which
    // then runs while they arrive (SEGMENT_EARLY_LOADS; other tiles load here).
    const bool early = SEGMENT_EARLY_LOADS && VEC > 1 && count == SCAN_TILE && can_vectorize(in);
    Vector<value_t, VEC> loads[SCAN_ITEMS / VEC];
    if (early) {
        #pragma unroll
        for (int r = 0; r < SCAN_ITEMS / VEC; ++r)
            loads[r] = load_vector(in, base + (index_t)(r * BLOCK_THREADS + threadIdx.x) * VEC);
    } else {
        load_tile(in, base, count, items);
    }
    if (count == 0 && threadIdx.x == 0) items[0] = initial;  // a value the operator may see (segments.cu)
    long long first_segment, last_segment;  // of the tile's first and last item
    block_find_segments(offsets, segments, tile_low, tile_high - 1, first_segment, last_segment);
    if (early) {
        #pragma unroll
        for (int r = 0; r < SCAN_ITEMS / VEC; ++r)  // a vector stays in one row (tile.cu)
            *reinterpret_cast<Vector<value_t, VEC>*>(items + slot((r * BLOCK_THREADS + threadIdx.x) * VEC)) = loads[r];
    }
    __syncthreads();  // the tile's items are in shared memory

    const long long f = tile_base + (long long)threadIdx.x * SCAN_ITEMS;
    const index_t low = (index_t)max(f, (long long)tile_low);
    const index_t high = (index_t)min(f + SCAN_ITEMS, (long long)tile_high);
#if PORTABLE_ORDER
    // The portable tree (order.cu, pieces.cu): every item of the input is a
    // piece, one that starts a segment a reset, so the pieces' scan gives at
    // a segment's end its fold in the portable tree, whatever came before.
    // 1. Where this thread's items start segments (bit j: item f + j), found
    //    by walking its segments as below; the position after the last
    //    segment counts as a start too. 2. Up the items' tree, the threads'
    //    tree and the Fenwick look-back, down from what comes before. 3. A
    //    segment that ends before position p is the fold of the pieces before
    //    p: the next item's down-swept value (the next thread's, the next
    //    tile's), written by the thread of its last item. Each walk searches
    //    the offsets as the device order's one walk does, so the offsets are
    //    read twice; as many operator calls as the device order.
    const int mine = (int)max(min((long long)SCAN_ITEMS, (long long)n - f), 0ll);  // items of the input, all
    unsigned int starts = 0;
    long long k0 = 0, next0 = 0;  // the segment of item `low`, and where it ends
    if (low < high) {
        k0 = first_segment == last_segment ? first_segment : find_segment(offsets, first_segment, last_segment, low);
        next0 = offset_at(offsets, k0 + 1);
        if (offset_at(offsets, k0) == low) starts |= 1u << (int)(low - f);
        long long k = k0, next = next0;
        #pragma unroll 1
        for (int j = 1; j <= SCAN_ITEMS; ++j) {  // a fixed bound (see find_segment)
            const index_t p = low + j;
            if (p > high) break;
            if (p == next) {  // segment k ends at item p - 1; the next one starts at p
                if (p < f + SCAN_ITEMS) starts |= 1u << (int)(p - f);
                k = segment_starting(offsets, k, p, last_segment);
                next = offset_at(offsets, k + 1);
            }
        }
    }
    value_t row[SCAN_ITEMS];
    read_row(items, count, row);
    up_sweep_pieces(row, starts, mine, combine);
    const Piece<value_t> mine_piece = piece_of(row[SCAN_ITEMS - 1], mine > 0, starts != 0);
    __syncthreads();  // every row is read: each thread keeps its own in its slots through the look-back
    write_row(items, row);
    const ThreadPrefixes<Piece<value_t>> prefixes = thread_prefixes(status, tile, epoch, mine_piece, joined);
    const bool has = prefixes.has;
    const Piece<value_t> carry = prefixes.before, following = prefixes.next;
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) row[j] = items[slot(threadIdx.x * SCAN_ITEMS + j)];
    down_sweep_pieces(row, pick(has, carry.value, row[SCAN_ITEMS - 1]), has && (carry.flags & PIECE_HAS), starts,
                      mine, combine);
    write_row(items, row);  // this thread's own slots, read back by it alone
    if (low < high) {
        long long k = k0, next = next0;
        #pragma unroll 1
        for (int j = 1; j <= SCAN_ITEMS; ++j) {
            const index_t p = low + j;
            if (p > high) break;
            if (p == next) {
                const value_t folded = p < f + SCAN_ITEMS ? items[slot((int)(p - tile_base))] : following.value;
                store(out, k, op(initial, folded, u));
                k = segment_starting(offsets, k, p, last_segment);
                next = offset_at(offsets, k + 1);
            }
        }
    }
#else
    // 1. This thread's items [low, high), folded into pieces; segments that
    //    start and end among them are written at once.
    Piece<value_t> piece = piece_of(items[0], false, false);  // no items: nothing, and no start
    bool closes = false;  // whether it ends a segment begun before its items (written after the scan)
    long long closing = 0;
    value_t head = items[0];  // its items of that segment
    if (low < high) {
        long long k = first_segment == last_segment ? first_segment
                                                    : find_segment(offsets, first_segment, last_segment, low);
        long long next = offset_at(offsets, k + 1);  // where segment k ends
        const bool begun_before = offset_at(offsets, k) < low;
        if (begun_before && next >= high && low == f && high == f + SCAN_ITEMS) {
            // The common case: one segment over the whole row, from registers.
            value_t row[SCAN_ITEMS];
            read_row(items, SCAN_TILE, row);
            value_t total = row[0];
            #pragma unroll
            for (int j = 1; j < SCAN_ITEMS; ++j) total = combine(total, row[j]);
            closes = next == high;
            closing = k;
            head = total;
            piece = piece_of(total, !closes, closes);
        } else {
            value_t acc = items[slot((int)(low - base))];
            bool first_piece = true;
            #pragma unroll 1
            for (int j = 1; j <= SCAN_ITEMS; ++j) {  // a fixed bound (see find_segment)
                const index_t p = low + j;
                if (p > high) break;
                const bool ends = p == next;  // segment k's last item is p - 1
                if (ends && first_piece && begun_before) {
                    closes = true;
                    closing = k;
                    head = acc;
                } else if (ends) {
                    store(out, k, op(initial, acc, u));
                }
                if (p == high) break;
                const value_t x = items[slot((int)(p - base))];
                if (ends) {
                    k = segment_starting(offsets, k, p, last_segment);
                    next = offset_at(offsets, k + 1);
                    first_piece = false;
                    acc = x;
                } else {
                    acc = combine(acc, x);
                }
            }
            const bool open = next != high;  // a segment goes on past these items
            piece = piece_of(acc, open, !open || !(first_piece && begun_before));
        }
    }

    // 2. The pieces before this thread's: the block's, then the earlier tiles'
    //    (segments.cu); 3. a segment begun before its items and ended among
    //    them is written with them.
    bool carried;
    const Piece<value_t> carry = exclusive_prefix(piece, status, tile, epoch, carried, joined);
    if (closes) store(out, closing, op(initial, carried && (carry.flags & PIECE_HAS) ? combine(carry.value, head) : head, u));
#endif

    // Empty segments, and the offsets' check: this block's share of the segments.
    const long long stride = (long long)gridDim.x * BLOCK_THREADS;
    #pragma unroll 1  // unrolled, its trip count would be a 64-bit division: a called routine
    for (long long k = (long long)blockIdx.x * BLOCK_THREADS + threadIdx.x; k < segments; k += stride) {
        const long long from = offset_at(offsets, k), to = offset_at(offsets, k + 1);
        if (from == to) store(out, k, initial);
        if (bad != nullptr && (to < from || (k == 0 && from < 0) || (k == segments - 1 && to > (long long)n)))
            atomicMax(bad, ~(unsigned long long)k);  // ~k: the first bad k is the largest (0: none)
    }
}
