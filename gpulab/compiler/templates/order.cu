// ---- The portable tree: a fold order fixed by the items' positions alone ------
// order="portable" (PORTABLE_ORDER) folds the same way on every GPU, target and
// launch shape, and the host replays it bit for bit (gpulab/host/portable.py).
// An aligned block is 2^k items from a multiple of 2^k; its value is its
// pairwise tree (its halves' values combined, left with right). F(p), the fold
// of positions [0, p), combines the blocks of p's binary digits, largest first:
//
//     p = 13 = 8 + 4 + 1:   F(13) = (x[0..8) op x[8..12)) op x[12]
//
// A reduce of n items is op(initial, F(n)); item i of an inclusive scan is
// F(i + 1) (op(initial, F(i + 1)) with an initial value), of an exclusive one
// op(initial, F(i)); a segment or a run of keys folds the blocks that tile
// its positions, the scan's F over pieces that reset where it starts
// (pieces.cu).
//
// Why no tile shape changes it. Tiles hold 2^t items from multiples of 2^t,
// threads 2^q of them (TILE, SCAN_TILE, SCAN_ITEMS: powers of two in these
// builds), so a position splits into digits, p = tile * 2^t + thread * 2^q +
// item, and
//   1. every block is computed from its two aligned halves, wherever they are
//      held (an item's vector, a thread's registers, a warp's lanes, a block's
//      warps, whole tiles), so by induction on its size its value is its
//      pairwise tree, whatever t and q are;
//   2. the blocks of F(p) are those of tile's digits (groups of whole tiles),
//      then thread's, then item's, each largest first, and the kernels fold
//      them in exactly that sequence, left to right, starting from the
//      look-back's F(tile * 2^t) (fenwick.cu; never a prefix folded otherwise);
// so F(p) depends on p and the items alone: other t and q cut p's digits in
// other places, the sequence of blocks is the same. The one position whose
// digits carry across the cut, p = (tile + 1) * 2^t (a tile's last inclusive
// item), takes F((tile + 1) * 2^t) from the look-back, never its own tile's
// blocks. The host folds the same blocks, level by level.
//
// Where it costs against order="device": as many operator calls, but a scan
// keeps its threads' tree in shared memory (BLOCK_THREADS - 1 values), and
// after the look-back each thread folds up to 2 * log2(BLOCK_THREADS) of them
// (its own prefix and the next thread's) where the device order combines
// once; its look-back reads one group per set digit of the tile's number
// (fenwick.cu) rather than a window of LOOKBACK_TILES. A reduce folds its
// last, short tile and its groups of tile results in a slower last pass
// (fold_blocks: FOLD_VALUES loads a thread, reduce.cu).

__host__ __device__ constexpr int log2_of(long long n) { return n <= 1 ? 0 : 1 + log2_of(n / 2); }

static_assert((BLOCK_THREADS & (BLOCK_THREADS - 1)) == 0, "the portable tree needs 2^k threads");
#define THREAD_LEVELS log2_of(BLOCK_THREADS)

// x[0] becomes the pairwise tree of x[0..N): neighbours, then pairs of them...
template <int N, typename T, typename Combine>
__device__ __forceinline__ T pairwise(T (&x)[N], Combine combine) {
    static_assert((N & (N - 1)) == 0, "a pairwise tree of 2^k values");
    #pragma unroll
    for (int s = 1; s < N; s *= 2) {
        #pragma unroll
        for (int j = 0; j < N; j += 2 * s) x[j] = combine(x[j], x[j + s]);
    }
    return x[0];
}

// Push value number `k` (a constant once unrolled) onto a binary counter of
// pairwise trees, where `take`: after c pushes, stack[l] holds the aligned
// block of 2^l values of c's digit l, so the stack is F(c)'s blocks. Every
// lane computes and a select keeps (no branch before shuffles, common.cu).
template <int LEVELS, typename T, typename Combine>
__device__ __forceinline__ void push(T (&stack)[LEVELS], int k, const T& value, bool take, Combine combine) {
    T carry = value;
    int level = 0;
    #pragma unroll
    for (; level + 1 < LEVELS && (k >> level & 1); ++level) carry = combine(stack[level], carry);
    stack[level] = pick(take, carry, stack[level]);
}

// ---- Reduce: the blocks of F(count), folded onto `acc` ---------------------------
// For thread 0: `acc` (when `has`) op the blocks of F(count) of the values
// value(0), ..., value(count - 1), count <= BLOCK_THREADS * P. Called by every
// thread (it has barriers). Thread t pushes the P values from t * P (all
// loads first); the block of F(count) at a level is the one node of that
// level that ends where count's lower digits begin: the thread, lane or warp
// that holds it stores it in blocks[level] as the tree passes, and thread 0
// folds them, largest first. A reduce's last short tile, and its tiles'
// results, take this path; whole tiles fold in vectors (fold_range.cu).
template <int P, typename Value, typename Combine>
__device__ __forceinline__ value_t fold_blocks(Value value, index_t count, value_t acc, bool& has, Combine combine) {
    constexpr int ITEM_LEVELS = log2_of(P);
    static_assert((P & (P - 1)) == 0, "2^k values per thread");
    constexpr int NOWHERE = ITEM_LEVELS + THREAD_LEVELS + 1;  // the slot of stores that capture nothing
    __shared__ value_t blocks[NOWHERE + 1];
    __shared__ value_t warp_totals[WARPS_PER_BLOCK];
    __syncthreads();  // an earlier call's blocks are read
    const index_t first = (index_t)threadIdx.x * P, last = count - 1;
    const int mine = count <= first ? 0 : (count - first >= P ? P : (int)(count - first));
    value_t x[P];
    #pragma unroll
    for (int j = 0; j < P; ++j) x[j] = value(first + j < last ? first + j : last);
    value_t stack[ITEM_LEVELS + 1];
    #pragma unroll
    for (int j = 0; j <= ITEM_LEVELS; ++j) stack[j] = x[0];  // real values for the operator (segments.cu)
    #pragma unroll
    for (int j = 0; j < P; ++j) push(stack, j, x[j], j < mine, combine);
    // Whole threads [0, full) hold a block of P values; a node of 2^l of them
    // is captured where it is F(full)'s block of level l.
    const int full = (int)(count / P), t = threadIdx.x, lane = lane_id();
    value_t total = stack[ITEM_LEVELS];
    // Every lane stores, where it captures nothing to blocks[NOWHERE]: a store in a branch between shuffles
    // made ptxas check the warp before the next (a called slow path for records on sm_80-89, common.cu).
    blocks[(full & 1) && t == full - 1 ? ITEM_LEVELS : NOWHERE] = total;
    #pragma unroll
    for (int level = 1; level <= 5; ++level) {  // within the warp: nodes of 2, 4, ... 32 threads
        const int d = 1 << (level - 1);
        const value_t joined = combine(total, shuffle_down(total, d));
        total = pick((lane & (2 * d - 1)) == 0, joined, total);
        blocks[(full >> level & 1) && t == (full >> (level + 1)) << (level + 1) ? ITEM_LEVELS + level : NOWHERE] = total;
    }
    if (lane == 0) warp_totals[warp_id()] = total;
    const bool ends = mine > 0 && mine < P;  // the thread where count ends: F(count)'s blocks within a thread
    #pragma unroll
    for (int level = 0; level < ITEM_LEVELS; ++level) blocks[ends && (mine >> level & 1) ? level : NOWHERE] = stack[level];
    __syncthreads();
    // Nodes of whole warps: every warp folds the warps' totals (no shuffle in a
    // branch that only some warps take, common.cu); warp 0 captures.
    value_t w = warp_totals[lane < WARPS_PER_BLOCK ? lane : 0];
    #pragma unroll
    for (int level = 6; level <= THREAD_LEVELS; ++level) {
        const int d = 1 << (level - 6);
        const value_t joined = combine(w, shuffle_down(w, d));
        w = pick((lane & (2 * d - 1)) == 0, joined, w);
        const bool captured = warp_id() == 0 && (full >> level & 1) &&
                              lane * WARP_THREADS == (full >> (level + 1)) << (level + 1);
        blocks[captured ? ITEM_LEVELS + level : NOWHERE] = w;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int level = ITEM_LEVELS + THREAD_LEVELS; level >= 0; --level) {
            if (count >> level & 1) {
                acc = has ? combine(acc, blocks[level]) : blocks[level];
                has = true;
            }
        }
    }
    return acc;
}

// ---- Scan: a thread's items, up and down its tree --------------------------------
// Up: x[j] becomes the value of the node that ends at item j (x[S - 1]: all
// S items; x[1]: items 0..1; x[3]: 0..3 ...), in place.
template <int S, typename T, typename Combine>
__device__ __forceinline__ void up_sweep(T (&x)[S], Combine combine) {
    #pragma unroll
    for (int s = 1; s < S; s *= 2) {
        #pragma unroll
        for (int j = 2 * s - 1; j < S; j += 2 * s) x[j] = combine(x[j - s], x[j]);
    }
}

// Down, from the fold of everything before the items (`before`, when `has`):
// x[j] becomes the fold of everything before item j. A left child takes its
// parent's prefix, a right child its parent's prefix op its left sibling: so
// item j's prefix is `before`, then the blocks of j's binary digits, largest
// first. Without `has` the leftmost nodes have no prefix (x[0] is then `before`,
// which must be a real value, and stands for none).
template <int S, typename T, typename Combine>
__device__ __forceinline__ void down_sweep(T (&x)[S], const T& before, bool has, Combine combine) {
    x[S - 1] = before;
    #pragma unroll
    for (int s = S / 2; s >= 1; s /= 2) {
        #pragma unroll
        for (int j = 2 * s - 1; j < S; j += 2 * s) {
            const T left = x[j - s];
            x[j - s] = x[j];
            const T joined = combine(x[j], left);
            x[j] = pick(j == 2 * s - 1 && !has, left, joined);
        }
    }
}

// ---- Scan: the threads' tree in shared memory -----------------------------------
// The nodes of the tree over a tile's threads that are left children (the only
// ones a prefix takes): level l has BLOCK_THREADS >> (l + 1) of them, node m's
// at nodes[NODE_OFFSET(l) + m / 2], BLOCK_THREADS - 1 in all.
#define NODE_OFFSET(level) (BLOCK_THREADS - (BLOCK_THREADS >> (level)))

template <typename T>
struct ThreadTree {
    T nodes[BLOCK_THREADS];     // BLOCK_THREADS - 1 used; the last takes the stores that keep nothing
    T warp_totals[WARPS_PER_BLOCK];
    T total;                    // the tile's (all BLOCK_THREADS threads')
};
#define NO_NODE (BLOCK_THREADS - 1)

// Store this thread's `value` (its items' pairwise tree) and the nodes above it.
// Called by every thread; a barrier follows within.
template <typename T, typename Combine>
__device__ __forceinline__ void build_thread_tree(ThreadTree<T>& tree, T value, Combine combine) {
    const int t = threadIdx.x, lane = lane_id();
    // Every lane stores, where it keeps nothing to nodes[NO_NODE] (as fold_blocks does, and why).
    tree.nodes[(t & 1) == 0 ? t >> 1 : NO_NODE] = value;
    #pragma unroll
    for (int level = 1; level <= 5; ++level) {  // within the warp
        const int d = 1 << (level - 1);
        const T joined = combine(value, shuffle_down(value, d));
        value = pick((lane & (2 * d - 1)) == 0, joined, value);
        const bool left_child = level < THREAD_LEVELS && (t & ((2 << level) - 1)) == 0;
        tree.nodes[left_child ? NODE_OFFSET(level) + (t >> (level + 1)) : NO_NODE] = value;
    }
    if (lane == 0) tree.warp_totals[warp_id()] = value;
    __syncthreads();
    // Whole warps: every warp folds the warps' totals (common.cu); warp 0 stores.
    T w = tree.warp_totals[lane < WARPS_PER_BLOCK ? lane : 0];
    #pragma unroll
    for (int level = 6; level <= THREAD_LEVELS; ++level) {
        const int d = 1 << (level - 6);
        const T joined = combine(w, shuffle_down(w, d));
        w = pick((lane & (2 * d - 1)) == 0, joined, w);
        const bool left_child = warp_id() == 0 && lane < WARPS_PER_BLOCK && level < THREAD_LEVELS &&
                                (lane & ((2 << (level - 5)) - 1)) == 0;
        tree.nodes[left_child ? NODE_OFFSET(level) + (lane >> (level - 4)) : NO_NODE] = w;
    }
    if (threadIdx.x == 0) tree.total = WARPS_PER_BLOCK > 1 ? w : value;
}

// The fold of everything before thread q's items (q <= BLOCK_THREADS - 1): `before`
// (the tile's prefix, when `has`), then the nodes of q's binary digits, largest
// first. Reads shared memory only (it runs after the look-back, common.cu).
template <typename T, typename Combine>
__device__ __forceinline__ T thread_prefix(const ThreadTree<T>& tree, int q, T before, bool& has, Combine combine) {
    #pragma unroll
    for (int level = THREAD_LEVELS - 1; level >= 0; --level) {
        if (q >> level & 1) {
            const T node = tree.nodes[NODE_OFFSET(level) + (q >> (level + 1))];
            before = has ? combine(before, node) : node;
            has = true;
        }
    }
    return before;
}
