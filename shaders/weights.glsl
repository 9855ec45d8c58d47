// Weight access for every supported tensor type. Each matrix is stored row-major as the engine
// repacked it at load time (engine/src/ops/weight_format.cpp):
//   bindings 0 (wq, uint[]) = the values, 1 (ws, float[]) = per-32-block scales (quantized types)
//   F32  : wq = IEEE floats
//   F16  : wq = IEEE halves, two per uint, element e in half (e & 1) of wq[e >> 1]
//   Q8_0 : wq = int8 values, four per uint in element order;  value = q * ws[e / 32]
//   Q4_0 : wq = 4-bit values, eight per uint in element order (element e in nibble e & 7);
//          value = (q - 8) * ws[e / 32]
// Adding a type = one branch in load8/load1 below + one row in the engine's weight-format table.
layout(std430, binding = 0) readonly buffer WeightValues { uint wq[]; };
layout(std430, binding = 1) readonly buffer WeightScales { float ws[]; };

vec4 signed_bytes(uint u) {
    return vec4(int(u << 24) >> 24, int(u << 16) >> 24, int(u << 8) >> 24, int(u) >> 24);
}

float load1(uint e) {
#if defined(WTYPE_F32)
    return uintBitsToFloat(wq[e]);
#elif defined(WTYPE_F16)
    return unpackHalf2x16(wq[e >> 1] >> ((e & 1u) * 16u)).x;
#elif defined(WTYPE_Q8_0)
    int q = int(wq[e >> 2] << (24u - (e & 3u) * 8u)) >> 24;
    return float(q) * ws[e >> 5];
#elif defined(WTYPE_Q4_0)
    uint q = (wq[e >> 3] >> ((e & 7u) * 4u)) & 15u;
    return (float(q) - 8.0) * ws[e >> 5];
#else
#error "define one WTYPE_*"
#endif
}

// Eight consecutive elements starting at e. Quantized types guarantee e % 8 == 0 (rows are whole
// 32-element blocks); float types may start anywhere (odd row lengths are legal).
void load8(uint e, out vec4 a, out vec4 b) {
#if defined(WTYPE_F32)
    a = vec4(uintBitsToFloat(wq[e]), uintBitsToFloat(wq[e + 1]), uintBitsToFloat(wq[e + 2]), uintBitsToFloat(wq[e + 3]));
    b = vec4(uintBitsToFloat(wq[e + 4]), uintBitsToFloat(wq[e + 5]), uintBitsToFloat(wq[e + 6]), uintBitsToFloat(wq[e + 7]));
#elif defined(WTYPE_F16)
    if ((e & 1u) == 0u) {
        uint h = e >> 1;
        a = vec4(unpackHalf2x16(wq[h]), unpackHalf2x16(wq[h + 1]));
        b = vec4(unpackHalf2x16(wq[h + 2]), unpackHalf2x16(wq[h + 3]));
    } else {
        a = vec4(load1(e), load1(e + 1), load1(e + 2), load1(e + 3));
        b = vec4(load1(e + 4), load1(e + 5), load1(e + 6), load1(e + 7));
    }
#elif defined(WTYPE_Q8_0)
    uint u0 = wq[e >> 2], u1 = wq[(e >> 2) + 1];
    float d = ws[e >> 5];
    a = signed_bytes(u0) * d;
    b = signed_bytes(u1) * d;
#elif defined(WTYPE_Q4_0)
    uint u = wq[e >> 3];
    float d = ws[e >> 5];
    a = (vec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u) - 8.0) * d;
    b = (vec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28) - 8.0) * d;
#endif
}
