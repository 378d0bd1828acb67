// One warp folds items [begin, end) in order; the result is valid in lane 0
// and `has` says whether there was any item. A full warp tile of aligned,
// contiguous input is read in UNROLL coalesced rows of 32 vectors, all in
// flight at once; lane l folds vector l of each row, then one warp fold per
// row (the rows' folds are independent, so their shuffles overlap) combines
// the lanes, and the rows are combined in order.
template <typename In, typename Combine>
__device__ __forceinline__ value_t warp_fold_range(const In& in, index_t begin, index_t end,
                                                   bool& has, Combine combine) {
    const int lane = lane_id();
    value_t acc = value_t();
    has = false;
    index_t tile = begin;
    if constexpr (VEC > 1) {
        if (can_vectorize(in)) {
            for (; tile + WARP_TILE <= end; tile += WARP_TILE) {
                Vector<value_t, VEC> v[UNROLL];
                #pragma unroll
                for (int k = 0; k < UNROLL; ++k)
                    v[k] = load_vector(in, tile + (index_t)(k * WARP_THREADS + lane) * VEC);
                value_t row[UNROLL];
                #pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    row[k] = v[k].item[0];
                    #pragma unroll
                    for (int j = 1; j < VEC; ++j) row[k] = combine(row[k], v[k].item[j]);
                    row[k] = warp_fold(row[k], combine);
                }
                #pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    acc = has ? combine(acc, row[k]) : row[k];
                    has = true;
                }
            }
        }
    }
    // What is left (a partial tile, or input that cannot be read in vectors):
    // lane l folds items [l * VEC, l * VEC + VEC) of each 32 * VEC segment.
    for (; tile < end; tile += WARP_THREADS * VEC) {
        value_t x = value_t();
        bool lane_has = false;
        #pragma unroll
        for (int j = 0; j < VEC; ++j) {
            index_t i = tile + (index_t)lane * VEC + j;
            if (i < end) {
                value_t item = load(in, i);
                x = lane_has ? combine(x, item) : item;
                lane_has = true;
            }
        }
        x = warp_fold_partial(x, lane_has, combine);
        if (__shfl_sync(0xffffffffu, lane_has, 0)) {
            acc = has ? combine(acc, x) : x;
            has = true;
        }
    }
    return acc;
}

// The block folds items [begin, end): warp w takes the w-th contiguous
// share (in whole warp tiles), then the warps' results are folded in order.
template <typename In, typename Combine>
__device__ __forceinline__ value_t block_fold_range(const In& in, index_t begin, index_t end,
                                                    bool& has, Combine combine) {
    const long long tiles = (end - begin + WARP_TILE - 1) / WARP_TILE;
    const index_t first = begin + (index_t)(tiles * warp_id() / WARPS_PER_BLOCK) * WARP_TILE;
    const index_t last = begin + (index_t)(tiles * (warp_id() + 1) / WARPS_PER_BLOCK) * WARP_TILE;
    value_t x = warp_fold_range(in, first, last < end ? last : end, has, combine);
    return block_fold(x, has, combine);
}
