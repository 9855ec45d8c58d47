// Paged KV cache access. One layer's K (or V) pool is [block][kv_head][slot_in_block][head_dim],
// stored as f16 (KV_F16, two per uint) or f32. A token's physical slot = block * BLOCK + offset.
#if defined(KV_F16)
#define KV_WORDS(n) ((n) / 2u)
#else
#define KV_WORDS(n) (n)
#endif
uint kv_index(uint slot, uint kv_head, uint d, uint n_kv, uint hd, uint block) {
    uint b = slot / block, o = slot % block;
    return ((b * n_kv + kv_head) * block + o) * hd + d;
}
