// ---- Reduce by key: each run of equal keys folded, in one pass with a look-back -
// As itertools.groupby: every run of consecutive keys that are equal
// (same_key) gives its key and the fold of its items, in order. Run r is
// written at out[r]: where a run goes depends on how many runs start before
// it, a count scanned as the filter scans its kept items, carried beside the
// pieces of the segmented reduce (segments.cu) in one status value.
//
// A tile is SCAN_TILE keys and their SCAN_TILE items, both in shared memory;
// thread t owns SCAN_ITEMS of each, from t * SCAN_ITEMS.
//   1. Each thread marks the runs that start among its items (a key unlike
//      the one before it) and folds its items into a piece.
//   2. The block scans the (starts, piece) pairs; the tile publishes its total
//      and finds what came before it from its window of predecessors.
//   3. Each thread walks its items again: where a run starts it writes the
//      key at the run's number and the fold of the run before (unless it is
//      the first run of all); the thread with the last item writes the last
//      run's fold and the number of runs.
// Every grouping depends on the tile's position alone, so a float fold has
// the same bits on every run.

// What a run of items gives to those after it: how many runs start in it, and its piece.
template <typename T>
struct Runs {
    index_t starts;
    Piece<T> piece;
};

template <typename T, typename Combine>
__device__ __forceinline__ Runs<T> join_runs(const Runs<T>& a, const Runs<T>& b, Combine combine) {
    Runs<T> out;
    out.starts = a.starts + b.starts;
    out.piece = join(a.piece, b.piece, combine);
    return out;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, SCAN_MIN_BLOCKS)
gpulab_reduce_by_key(Input0 keys, Input1 in, index_t n, KeyOutput out_keys, Output out, long long* runs_total,
                     TileStatus<Runs<value_t>> status, unsigned int epoch, Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    auto joined = [&](const Runs<value_t>& a, const Runs<value_t>& b) { return join_runs(a, b, combine); };
    __shared__ alignas(16) key_t key_items[TILE_SLOTS];
    __shared__ alignas(16) value_t items[TILE_SLOTS];

    const long long tile = blockIdx.x;
    const index_t base = (index_t)tile * SCAN_TILE;
    const int count = n - base < SCAN_TILE ? (int)(n - base) : SCAN_TILE;
    load_tile(keys, base, count, key_items);
    load_tile(in, base, count, items);
    const int first = threadIdx.x * SCAN_ITEMS;
    const int mine = count - first < 0 ? 0 : (count - first < SCAN_ITEMS ? count - first : SCAN_ITEMS);
    // The key before this thread's first item: its left neighbour's last, or the previous tile's.
    const key_t previous = threadIdx.x == 0 && base > 0 ? load(keys, base - 1) : key_t();
    __syncthreads();

    // 1. Where runs start among this thread's items (bit j: item j starts one), and its piece.
    key_t before = threadIdx.x == 0 ? (base > 0 ? previous : key_items[0]) : key_items[slot(first - 1)];
    unsigned int starts = 0;
    value_t acc = items[slot(first < count ? first : 0)];
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) {
        const int k = first + j < count ? first + j : 0;  // past the last item: a copy of the first (tile.cu)
        const key_t key = key_items[slot(k)];
        const bool start = j < mine && (base + first + j == 0 || !same_key(before, key));
        starts |= (unsigned int)start << j;
        before = key;
#if !PORTABLE_ORDER
        if (j > 0) {
            const value_t joined_item = combine(acc, items[slot(k)]);  // a select, no branch (common.cu)
            acc = j < mine ? (start ? items[slot(k)] : joined_item) : acc;
        }
#endif
    }
#if PORTABLE_ORDER
    // The portable tree (order.cu, pieces.cu): the items' pieces up their tree;
    // the threads' tree and the Fenwick look-back of (run starts, piece); down
    // from what comes before the thread. Then row[j] is the fold of item j's
    // run before item j, so a run that starts at j ends the run before with
    // row[j], and the last item's run ends with the next item's (the next
    // thread's, the next tile's). As many operator calls as the device order;
    // the shared tree and the look-back cost what they cost a scan.
    value_t row[SCAN_ITEMS];
    read_row(items, count, row);
    up_sweep_pieces(row, starts, mine, combine);
    Runs<value_t> mine_runs;
    mine_runs.starts = __popc(starts);
    mine_runs.piece = piece_of(row[SCAN_ITEMS - 1], mine > 0, starts != 0);
    __syncthreads();  // every row is read: each thread keeps its own in its slots through the look-back
    write_row(items, row);  // (not in registers: with 8-byte keys and values they spilled)
    const ThreadPrefixes<Runs<value_t>> prefixes = thread_prefixes(status, tile, epoch, mine_runs, joined);
    const bool has = prefixes.has;
    const Runs<value_t> carry = prefixes.before, next = prefixes.next;
    #pragma unroll
    for (int j = 0; j < SCAN_ITEMS; ++j) row[j] = items[slot(first + j)];
    down_sweep_pieces(row, pick(has, carry.piece.value, row[SCAN_ITEMS - 1]),
                      has && (carry.piece.flags & PIECE_HAS), starts, mine, combine);
    write_row(items, row);  // this thread's own slots, read back by it alone
    index_t run = has ? carry.starts : 0;  // the runs begun before this thread's first item
    #pragma unroll 1
    for (int j = 0; j < mine; ++j) {
        if (starts >> j & 1) {
            if (run > 0) store(out, run - 1, items[slot(first + j)]);  // the run before ends at item j - 1
            store(out_keys, run, key_items[slot(first + j)]);
            ++run;
        }
    }
    if (mine > 0 && base + first + mine == n) {  // the last item of all: the last run ends here
        store(out, run - 1, mine < SCAN_ITEMS ? items[slot(first + mine)] : next.piece.value);
        *runs_total = run;
    }
#else
    Runs<value_t> mine_runs;
    mine_runs.starts = __popc(starts);
    mine_runs.piece = piece_of(acc, mine > 0, starts != 0);

    // 2. The runs before this thread's: the block's, then the earlier tiles' (segments.cu).
    bool carried;
    const Runs<value_t> carry = exclusive_prefix(mine_runs, status, tile, epoch, carried, joined);

    // 3. Write: the keys of the runs that start here, the folds of the runs that end here.
    index_t run = (carried ? carry.starts : 0) - 1;  // the run open before this thread's first item (-1: none)
    value_t fold = carry.piece.value;                // its items before this thread's
    bool has = carried && (carry.piece.flags & PIECE_HAS);
    #pragma unroll 1  // a loop, not SCAN_ITEMS copies of its stores: half the kernel's code, and of its link time
    for (int j = 0; j < mine; ++j) {
        const value_t x = items[slot(first + j)];
        if (starts >> j & 1) {
            if (has) store(out, run, fold);  // the run before ends at item j - 1
            ++run;
            store(out_keys, run, key_items[slot(first + j)]);
            fold = x;
        } else {
            fold = has ? combine(fold, x) : x;
        }
        has = true;
    }
    if (mine > 0 && base + first + mine == n) {  // the last item of all: the last run ends here
        store(out, run, fold);
        *runs_total = run + 1;
    }
#endif
}
