// ---- The portable tree over pieces of segments (order.cu, segments.cu) ---------
// A segment's or a run's fold in the portable order is the scan's over pieces
// (segments.cu): at its last item the fold of pieces [0, p) of the portable
// tree is, after the reset where it starts, the left fold of the aligned
// blocks that tile it (each joined from its halves: where a reset falls in
// the right half only the right half's part is kept, so a block that holds
// the start gives the fold from the start to its end). So the kernels run the
// scan's steps (up, the threads' tree, the Fenwick look-back, down) on pieces.
// A thread's pieces are its S items' values with the bits of `starts` (bit j:
// item j starts a segment) and `mine` (its items below the input's end, a
// prefix of the row): a node's reset is a start among its items, and it has
// items where its first one is below `mine`. So a row holds values alone, as
// a scan's does, and the flags are shifts of one word.

__device__ __forceinline__ bool starts_among(unsigned int starts, int first, int count) {
    return ((starts >> first) & (count >= 32 ? ~0u : (1u << count) - 1u)) != 0;
}

// Up: x[j] becomes the piece value of the node that ends at item j.
template <int S, typename T, typename Combine>
__device__ __forceinline__ void up_sweep_pieces(T (&x)[S], unsigned int starts, int mine, Combine combine) {
    #pragma unroll
    for (int s = 1; s < S; s *= 2) {
        #pragma unroll
        for (int j = 2 * s - 1; j < S; j += 2 * s) {
            const T joined = combine(x[j - s], x[j]);  // every lane combines; selects keep (common.cu)
            x[j] = pick(j - s + 1 >= mine, x[j - s], pick(starts_among(starts, j - s + 1, s), x[j], joined));
        }
    }
}

// Down, from the pieces before the items (`before`, with items of the current
// segment where `has`): x[j] becomes the value of the pieces before item j.
template <int S, typename T, typename Combine>
__device__ __forceinline__ void down_sweep_pieces(T (&x)[S], const T& before, bool has, unsigned int starts, int mine,
                                                  Combine combine) {
    x[S - 1] = before;
    #pragma unroll
    for (int s = S / 2; s >= 1; s /= 2) {
        #pragma unroll
        for (int j = 2 * s - 1; j < S; j += 2 * s) {
            const int parent = j - 2 * s + 1;  // the parent's first item: its prefix has items if any is before it
            const bool parent_has = has || (parent > 0 && mine > 0);
            const T left = x[j - s];
            x[j - s] = x[j];
            const T joined = combine(x[j], left);
            x[j] = pick(starts_among(starts, parent, s) || !parent_has, left, joined);
        }
    }
}

// The threads' step between up and down: the threads' tree of each thread's
// summary `mine` (its Piece, or reduce_by_key's Runs), the Fenwick look-back
// over the tiles before (order.cu, fenwick.cu), then the fold before this
// thread's first item (`before`, with `has`: anything precedes it) and before
// the next thread's (`next`: the tile's end for the last thread). Called by
// every thread (it has barriers).
template <typename S>
struct ThreadPrefixes {
    S before, next;
    bool has;
};

template <typename S, typename Join>
__device__ __forceinline__ ThreadPrefixes<S> thread_prefixes(const TileStatus<S>& status, long long tile,
                                                             unsigned int epoch, const S& mine, Join joined) {
    __shared__ ThreadTree<S> tree;
    __shared__ FenwickWindow<S> window;
    build_thread_tree(tree, mine, joined);
    fenwick_look_back(status, tile, epoch, tree.total, window, joined);  // its barriers show the tree
    ThreadPrefixes<S> found;
    found.has = window.has_before;
    bool has_next = window.has_before;
    found.before = thread_prefix(tree, threadIdx.x, window.before, found.has, joined);
    found.next = threadIdx.x + 1 < BLOCK_THREADS
                     ? thread_prefix(tree, threadIdx.x + 1, window.before, has_next, joined)
                     : window.after;
    return found;
}
