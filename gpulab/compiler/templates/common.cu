// ---- Helpers shared by every primitive --------------------------------------

// Where item i of an input lives: inputs are 1-D or 2-D affine views
// (N-d inputs are coalesced to at most two dimensions on the host).
struct Layout {
    index_t inner_size;    // items per row (n for a 1-D input)
    index_t inner_stride;  // elements between neighbours in a row
    index_t outer_stride;  // elements between rows
};

__device__ __forceinline__ index_t offset_of(const Layout& layout, index_t i) {
    if (layout.inner_stride == 1 && layout.inner_size == layout.outer_stride) return i;
    return (i / layout.inner_size) * layout.outer_stride + (i % layout.inner_size) * layout.inner_stride;
}

__device__ __forceinline__ bool is_contiguous(const Layout& layout) {
    return layout.inner_stride == 1 && layout.inner_size == layout.outer_stride;
}

// N items of T in one aligned load or store (16 bytes for the widest type).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vector {
    T item[N];
};

// Warp shuffles of any trivially copyable type, one 32-bit word at a time.
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
