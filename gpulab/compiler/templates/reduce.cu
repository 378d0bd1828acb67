// ---- Reduce: one launch, every fold in the input's order ---------------------
// Block b folds the b-th TILE items into partials[b] (block_fold_tile: one
// fixed share, every load in flight before the first fold, no loop over the
// input). The partials are counted in groups of TILE: the last block to
// finish in a group folds that group's partials, and when there are several
// groups the last of those folds the groups' results (two levels: up to
// TILE^3 items, ReducePlan checks). The block that folds the last level puts
// the initial value on the left and writes the result; a grid of one block
// folds everything itself. Each counter wraps back to 0 for the next launch.
// The grouping is fixed by the tiling, so a float result's bits never depend
// on timing; and no shuffle sits in a loop (it would get a called slow path on
// sm_80-89, common.cu): only block_fold_results' loop, before its shuffles.
// Tile size: each thread reads REDUCE_THREAD_BYTES in UNROLL vectors, so each
// SM keeps well over the ~20 KiB of reads in flight that the memory needs to
// stay busy.

#define PARTIAL_LOADS 4  // partial results a thread loads at a time (16 took 15 more registers in a float32 reduce)

// Thread 0 stores the block's `value` at `slot` and counts it in `counter`,
// one of `members` blocks; the block learns whether it was the last of them
// (and then sees every other member's value).
__device__ __forceinline__ bool publish(value_t* slot, value_t value, unsigned int* counter, unsigned int members) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
        *slot = value;
        __threadfence();  // the value is visible before the count says so
        last = atomicInc(counter, members - 1) == members - 1;
        if (last) __threadfence();  // and every other member's value before this block reads them
    }
    __syncthreads();
    return last;
}

// Thread 0 receives the fold of `count` partial results (at most TILE), in order, written by other blocks
// of this launch. Thread t folds its own `per_thread` contiguous ones in a loop (no shuffle in it; its trip
// count is the same for every thread), PARTIAL_LOADS loads in flight at a time, then the threads are folded
// in order. One copy of this code serves both levels: a second instance of the input's unrolled fold, for
// partials, made a third of the kernel's code and of its link time.
template <typename Combine>
__device__ __forceinline__ value_t block_fold_results(const value_t* results, unsigned int count, bool& has,
                                                      Combine combine) {
    const unsigned int per_thread = (count + BLOCK_THREADS - 1) / BLOCK_THREADS;
    const unsigned int first = threadIdx.x * per_thread, last = count - 1;
    value_t acc = results[min(first, last)];
    has = first < count;
    #pragma unroll PARTIAL_LOADS
    for (unsigned int k = 1; k < per_thread; ++k) {
        const unsigned int at = first + k;
        const value_t joined = combine(acc, results[min(at, last)]);
        acc = at < count ? joined : acc;
    }
    return block_fold(warp_fold_partial(acc, has, combine), has, combine);
}

#if PORTABLE_ORDER
// ---- The portable tree (order.cu) --------------------------------------------------
// F(n) is folded from its blocks: those of n's digits from TILE * TILE up are
// groups of whole groups of tiles, from TILE up groups of whole tiles, below
// TILE blocks of the last, short tile. So: block b of a whole tile folds it
// pairwise into partials[b] (its vectors' items and its rows pairwise,
// fold_range.cu: the same loads and operator calls as the device order); the
// last block of a whole group of TILE tiles folds their results pairwise
// (one block of F, fold_blocks), and the last block of all folds F(n): the
// whole groups' values, the last group's whole tiles', then the short tile's
// items, each as the blocks of F(count), onto one value, initial on its left.
// The cost against order="device" is in those last blocks alone: fold_blocks
// loads FOLD_VALUES values a thread, where the device order's loop folds
// PARTIAL_LOADS at a time, and the short tile is read by the block that
// finishes last (one tile, a few microseconds), not by its own.
#define FOLD_VALUES (VEC * UNROLL)  // values a thread of fold_blocks takes: TILE a block

// Value i of an array of partial results; item i from `base` of the input.
struct Partials {
    const value_t* values;
    __device__ __forceinline__ value_t operator()(index_t i) const { return values[i]; }
};

template <typename In>
struct ItemsFrom {
    const In& in;
    index_t base;
    __device__ __forceinline__ value_t operator()(index_t i) const { return load(in, base + i); }
};
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, REDUCE_MIN_BLOCKS)
gpulab_reduce(Input0 in, index_t n, value_t* out, value_t* partials, unsigned int* finished, value_t initial,
              Uniforms u) {
    auto combine = [&](value_t a, value_t b) { return op(a, b, u); };
    if (n == 0) {  // nothing to read (the last tile's path reads at least one item)
        if (threadIdx.x == 0) *out = initial;
        return;
    }
#if PORTABLE_ORDER
    const index_t whole = n / TILE, base = (index_t)blockIdx.x * TILE;  // whole tiles; this block's first item
    const unsigned int tiles = gridDim.x;
    bool has = false;
    value_t total = value_t();
    if (base + TILE <= n && can_vectorize(in)) {  // a whole tile (the same for the whole block)
        has = true;
        total = block_fold(warp_fold_vectors(in, base + (index_t)warp_id() * WARP_TILE, combine), has, combine);
    } else if (base + TILE <= n) {  // in items: one block of F (TILE items) from pairs of items
        total = fold_blocks<FOLD_VALUES>(ItemsFrom<Input0>{in, base}, TILE, total, has, combine);
    }
    value_t acc = total;
    if (tiles > 1) {
        const unsigned int group = blockIdx.x / TILE, groups = (tiles + TILE - 1) / TILE;
        const unsigned int members = min((unsigned int)TILE, tiles - group * TILE);
        if (!publish(partials + blockIdx.x, total, finished + group, members)) return;  // a short tile's: unread
        const unsigned int whole_groups = (unsigned int)(whole / TILE);
        if (groups > 1) {
            has = false;
            if (group < whole_groups) total = fold_blocks<FOLD_VALUES>(Partials{partials + group * TILE}, TILE, total,
                                                                       has, combine);
            if (!publish(partials + tiles + group, total, finished + groups, groups)) return;
        }
        // The last block of all: F over the whole groups, then the last group's whole tiles.
        const index_t grouped = groups > 1 ? (index_t)whole_groups * TILE : 0;
        has = false;
        if (groups > 1 && whole_groups > 0)
            acc = fold_blocks<FOLD_VALUES>(Partials{partials + tiles}, whole_groups, acc, has, combine);
        if (whole > grouped)
            acc = fold_blocks<FOLD_VALUES>(Partials{partials + grouped}, whole - grouped, acc, has, combine);
    }
    if (n > whole * TILE)  // the short tile's items, read again by the last block
        acc = fold_blocks<FOLD_VALUES>(ItemsFrom<Input0>{in, whole * TILE}, n - whole * TILE, acc, has, combine);
    if (threadIdx.x == 0) *out = has ? op(initial, acc, u) : initial;
#else
    bool has;
    value_t total = block_fold_tile(in, (index_t)blockIdx.x * TILE, n, has, combine);
    const unsigned int tiles = gridDim.x;
    if (tiles > 1) {
        // partials: one per tile, then one per group; finished: one counter per group, then one for the groups
        const unsigned int group = blockIdx.x / TILE, groups = (tiles + TILE - 1) / TILE;
        const unsigned int members = min((unsigned int)TILE, tiles - group * TILE);
        if (!publish(partials + blockIdx.x, total, finished + group, members)) return;
        total = block_fold_results(partials + group * TILE, members, has, combine);
        if (groups > 1) {
            if (!publish(partials + tiles + group, total, finished + groups, groups)) return;
            total = block_fold_results(partials + tiles, groups, has, combine);
        }
    }
    if (threadIdx.x == 0) *out = has ? op(initial, total, u) : initial;
#endif
}
