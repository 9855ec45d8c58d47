// Per-head Q/K RMSNorm + RoPE + KV store of one token's head (Qwen3's Q/K path), shared by the
// separate kernel (qk_norm_rope.comp, one invocation per token and head) and the fused decode
// layer (decode_layer.comp, the heads of a Q/K/V band once the band's rows are stored), so that
// both compute the same bits: one invocation walks the whole head, in order.
//
// The including kernel provides: y_get(o) / y_set(o, v) over the step's Q/K/V rows (o = t *
// qkv_stride + column), qk_norm_w(i) (the layer's Q norm at i < hd, its K norm at hd + i),
// rope_at(i), k_store(i, v) / v_store(i, v) (cache element index i, a pair of values) and, from
// kv.glsl, kv_index. Q heads are written back normalised and rotated; K heads go to the cache
// normalised and rotated; V heads go to the cache as they are. `info`: the token's texel of `tok`.
void qk_norm_rope_head(uint t, uint h, uvec4 info, uint n_head, uint n_kv, uint hd, uint n_rot, uint block,
                       uint qkv_stride, float eps) {
    const uint base = t * qkv_stride + h * hd;
    const bool is_v = h >= n_head + n_kv;
    float scale = 1.0;
    if (!is_v) {
        float ss = 0.0;
        for (uint d = 0u; d < hd; ++d) ss += y_get(base + d) * y_get(base + d);
        scale = inversesqrt(ss / float(hd) + eps);
    }
    const uint norm_base = h < n_head ? 0u : hd;
    for (uint d = 0u; d < hd; d += 2u) {
        vec2 v = vec2(y_get(base + d), y_get(base + d + 1u));
        if (!is_v) {
            v *= scale * vec2(qk_norm_w(norm_base + d), qk_norm_w(norm_base + d + 1u));
            if (d < n_rot) {
                const uint r = 2u * (info.x * (n_rot / 2u) + d / 2u);
                const vec2 cs = vec2(rope_at(r), rope_at(r + 1u));
                v = vec2(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
            }
        }
        if (h < n_head) {
            y_set(base + d, v.x);
            y_set(base + d + 1u, v.y);
        } else if (!is_v) {
            k_store(kv_index(info.z, h - n_head, d, n_kv, hd, block), v);
        } else {
            v_store(kv_index(info.z, h - n_head - n_kv, d, n_kv, hd, block), v);
        }
    }
}
