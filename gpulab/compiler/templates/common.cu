// ---- Helpers shared by every primitive --------------------------------------

// Where item i of an input lives: inputs are 1-D or 2-D affine views
// (N-d inputs are coalesced to at most two dimensions on the host).
struct Layout {
    index_t inner_size;    // items per row (n for a 1-D input)
    index_t inner_stride;  // elements between neighbours in a row
    index_t outer_stride;  // elements between rows
    unsigned long long row_multiplier;  // i / inner_size, as row_of takes it (0: every i is in row 0)
    unsigned int row_shift;
};

// i / inner_size for 0 <= i, as a multiply and a shift that the host chose
// (runtime/arrays.py: row_divisor). A division would be ~20 instructions
// (a called routine for 64 bits) in each of the dozens of loads a thread
// unrolls on a strided input or a last tile: the largest part of the kernels'
// code, and of their link time, before this.
__device__ __forceinline__ index_t row_of(const Layout& layout, index_t i) {
    if constexpr (sizeof(index_t) == 4) {
        return (index_t)(__umulhi((unsigned int)i, (unsigned int)(layout.row_multiplier >> 32)) >> layout.row_shift);
    } else {
        return (index_t)(__umul64hi((unsigned long long)i, layout.row_multiplier) >> layout.row_shift);
    }
}

__device__ __forceinline__ bool is_contiguous(const Layout& layout) {
    return layout.inner_stride == 1 && layout.inner_size == layout.outer_stride;
}

// Right for every layout (a contiguous one gives i back), and without a branch:
// offsets are taken between shuffles (fold_range.cu). Contiguous inputs take
// vector loads (load_vector) wherever a whole tile is there, so row_of is
// paid on odd layouts and the last tile only.
__device__ __forceinline__ index_t offset_of(const Layout& layout, index_t i) {
    const index_t row = row_of(layout, i);
    return row * layout.outer_stride + (i - row * layout.inner_size) * layout.inner_stride;
}

// N items of T in one aligned load or store (16 bytes for the widest type),
// aligned to the largest power of two that divides its size (a 12-byte record: 4).
template <typename T, int N>
struct alignas((sizeof(T) * N) & (0 - sizeof(T) * N)) Vector {
    T item[N];
};

// Warp shuffles of any trivially copyable type, one 32-bit word at a time.
// On sm_80-89 ptxas gives a shuffle a called slow path (CALL
// __cuda_sm70_shflsync_*) unless it can prove the whole warp is there. So
// every shuffle and vote here is reached by whole warps in straight-line
// code: never in a loop that is not unrolled, never in a branch that depends
// on the thread (lanes that should not combine take a select instead), and
// never after a loop that polls memory written by other blocks (ptxas must
// then assume the warp may have split for good): the look-back folds
// through shared memory (lookback.cu).
template <typename T, typename Shuffle>
__device__ __forceinline__ T shuffle_words(T value, Shuffle shuffle) {
    constexpr int WORDS = (sizeof(T) + 3) / 4;
    unsigned int words[WORDS] = {};
    memcpy(words, &value, sizeof(T));
    #pragma unroll
    for (int w = 0; w < WORDS; ++w) words[w] = shuffle(words[w]);
    memcpy(&value, words, sizeof(T));
    return value;
}

// `take ? a : b` for any trivially copyable type, a select per 32-bit word:
// for a struct of several fields ptxas may branch around the copy instead,
// and a branch between shuffles is one it cannot prove the whole warp takes.
template <typename T>
__device__ __forceinline__ T pick(bool take, const T& a, const T& b) {
    constexpr int WORDS = (sizeof(T) + 3) / 4;
    unsigned int words[WORDS] = {}, others[WORDS] = {};
    memcpy(words, &a, sizeof(T));
    memcpy(others, &b, sizeof(T));
    #pragma unroll
    for (int w = 0; w < WORDS; ++w) words[w] = take ? words[w] : others[w];
    T value;
    memcpy(&value, words, sizeof(T));
    return value;
}

template <typename T>
__device__ __forceinline__ T shuffle_down(T value, int delta) {
    return shuffle_words(value, [delta](unsigned int w) { return __shfl_down_sync(0xffffffffu, w, delta); });
}

template <typename T>
__device__ __forceinline__ T shuffle_up(T value, int delta) {
    return shuffle_words(value, [delta](unsigned int w) { return __shfl_up_sync(0xffffffffu, w, delta); });
}

template <typename T>
__device__ __forceinline__ T shuffle_index(T value, int lane) {
    return shuffle_words(value, [lane](unsigned int w) { return __shfl_sync(0xffffffffu, w, lane); });
}

__device__ __forceinline__ int lane_id() { return threadIdx.x % WARP_THREADS; }
__device__ __forceinline__ int warp_id() { return threadIdx.x / WARP_THREADS; }
