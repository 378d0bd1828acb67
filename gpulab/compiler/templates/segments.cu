// ---- Pieces of segments: folds that start again where a segment starts -------
// A piece is what a run of items contributes to the segments it touches: the
// fold of its items after the last segment start among them, and whether
// there was such a start. Two pieces in order join as
//
//     a + b = b.reset ? b : {a.value op b.value, a.reset}
//
// which is associative whenever op is (Blelloch's segmented scan), so pieces
// go through the same block scan (tile.cu) and the same deterministic
// look-back (lookback.cu) as a scan's values, combined in a fixed order.
// `value` always holds a real item, or a fold of real items, even where
// `has` is false: every lane of a warp combines (common.cu), and the operator
// then only ever sees values it could meet in the input.
#define PIECE_HAS 1u    // an item was folded into the value
#define PIECE_RESET 2u  // a segment starts among the items (what came before belongs to another)

template <typename T>
struct Piece {
    T value;
    unsigned int flags;  // PIECE_HAS, PIECE_RESET: bits of one word, joined by two logic operations
};

template <typename T>
__device__ __forceinline__ Piece<T> piece_of(T value, bool has, bool reset) {
    Piece<T> piece;
    piece.value = value;
    piece.flags = (has ? PIECE_HAS : 0u) | (reset ? PIECE_RESET : 0u);
    return piece;
}

template <typename T, typename Combine>
__device__ __forceinline__ Piece<T> join(const Piece<T>& a, const Piece<T>& b, Combine combine) {
    const T joined = combine(a.value, b.value);  // computed by every lane, kept where it belongs
    const bool both = (a.flags & b.flags & PIECE_HAS) && !(b.flags & PIECE_RESET);
    Piece<T> out;
    out.value = pick(both, joined, pick((b.flags & (PIECE_HAS | PIECE_RESET)) != 0, b.value, a.value));
    out.flags = b.flags & PIECE_RESET ? b.flags : a.flags | b.flags;
    return out;
}

// What comes before this thread's items, over the whole input: the block's
// scan of the threads' values (`mine`, an identity where a thread has no
// items), then the tile's look-back, joined; `has` says whether anything
// does. The last thread publishes the tile's total at once, thread 0 its
// inclusive prefix once the look-back has it. Called by every thread.
template <typename T, typename Join>
__device__ __forceinline__ T exclusive_prefix(const T& mine, const TileStatus<T>& status, long long tile,
                                              unsigned int epoch, bool& has, Join join) {
    __shared__ T tile_total, tile_prefix;
    __shared__ bool tile_has_prefix;
    bool has_prefix;
    const T prefix = block_exclusive_prefix(mine, has_prefix, join);
    if (threadIdx.x == BLOCK_THREADS - 1) {
        tile_total = has_prefix ? join(prefix, mine) : mine;
        publish(status.aggregate, tile, epoch, tile_total);
    }
    T before;
    const bool has_before = look_back(status, tile, epoch, before, join);  // its barriers show tile_total
    if (threadIdx.x == 0) {
        tile_prefix = before;
        tile_has_prefix = has_before;
        publish(status.inclusive, tile, epoch, has_before ? join(before, tile_total) : tile_total);
    }
    __syncthreads();
    has = has_prefix || tile_has_prefix;
    if (!tile_has_prefix) return prefix;
    return has_prefix ? join(tile_prefix, prefix) : tile_prefix;
}
