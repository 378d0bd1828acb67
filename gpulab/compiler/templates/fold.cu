// ---- In-order folds: the left value is always combined with the right --------
// The operator need only be associative: items are never reordered.
// `combine(a, b)` is the operator (or + for counts). Every lane combines and
// a select keeps the result where it is wanted: a branch around the operator
// between two shuffles could leave ptxas unsure that the warp is whole
// (common.cu).

// Lane 0 receives x[0] op x[1] op ... op x[31]. At step d, lanes that are
// multiples of 2d hold the fold of their d lanes and add the next d lanes'.
template <typename T, typename Combine>
__device__ __forceinline__ T warp_fold(T x, Combine combine) {
    const int lane = lane_id();
    #pragma unroll
    for (int d = 1; d < WARP_THREADS; d *= 2) {
        const T joined = combine(x, shuffle_down(x, d));
        x = (lane & (2 * d - 1)) == 0 ? joined : x;
    }
    return x;
}

// The same when only the first lanes hold a value (`has`: true for a prefix
// of the lanes, as every caller's items are; lane 0's `has` then says whether
// any did). From 4 bytes on, one vote counts them, where a shuffle of `has`
// at every step cost five and 40% of a float32 reduce's SASS. Smaller items keep
// the shuffles: with the vote, ptxas held all of an int8 tile's loads at once
// (128 registers against 71) and an int8 reduce ran at 0.8x (run 45).
template <typename T, typename Combine>
__device__ __forceinline__ T warp_fold_partial(T x, bool& has, Combine combine) {
    const int lane = lane_id();
    if constexpr (sizeof(T) >= 4) {
        const int holding = __popc(__ballot_sync(0xffffffffu, has));
        #pragma unroll
        for (int d = 1; d < WARP_THREADS; d *= 2) {
            const T joined = combine(x, shuffle_down(x, d));
            x = (lane & (2 * d - 1)) == 0 && lane + d < holding ? joined : x;
        }
    } else {
        #pragma unroll
        for (int d = 1; d < WARP_THREADS; d *= 2) {
            const T right = shuffle_down(x, d);
            const bool right_has = __shfl_down_sync(0xffffffffu, has, d) && lane + d < WARP_THREADS;
            const T joined = combine(x, right);
            const bool take = (lane & (2 * d - 1)) == 0 && right_has;
            x = take ? (has ? joined : right) : x;
            has = has || take;
        }
    }
    return x;
}

// Every lane receives x[0] op ... op x[lane] (an inclusive scan of the warp).
template <typename T, typename Combine>
__device__ __forceinline__ T warp_scan(T x, Combine combine) {
    const int lane = lane_id();
    #pragma unroll
    for (int d = 1; d < WARP_THREADS; d *= 2) {
        const T joined = combine(shuffle_up(x, d), x);
        x = pick(lane >= d, joined, x);
    }
    return x;
}

// Thread 0 receives the fold of the warps' values (lane 0 of each) in warp
// order. Called by every thread, and every warp folds the warps' values, so
// that no shuffle sits in a branch that only some warps take.
template <typename T, typename Combine>
__device__ __forceinline__ T block_fold(T warp_total, bool& has, Combine combine) {
    static_assert(WARPS_PER_BLOCK <= WARP_THREADS, "one warp folds the warps' values");
    __shared__ T totals[WARPS_PER_BLOCK];
    __shared__ bool present[WARPS_PER_BLOCK];
    if (lane_id() == 0) {
        totals[warp_id()] = warp_total;
        present[warp_id()] = has;
    }
    __syncthreads();
    const int w = lane_id() < WARPS_PER_BLOCK ? lane_id() : 0;
    const T x = totals[w];
    has = lane_id() < WARPS_PER_BLOCK && present[w];
    return warp_fold_partial(x, has, combine);
}
