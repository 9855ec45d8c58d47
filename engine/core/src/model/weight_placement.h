// Where every piece of the weights lies in the device's weight slabs, decided before any is
// uploaded: the memory plan counts the slabs this placement makes (alignment padding included,
// and no slab tails, see below), and the upload puts each piece where it says, so what the fit
// check counted is what is allocated, to the byte.
//
// A piece is one reserve() of the upload (a tiled part, a row-major part's values or scales).
// Pieces go into slabs of at most `slab_bytes` in upload order, each at an `align`ed offset. With
// `keep_layers` (lavapipe's fused decode layers, which read a layer's weights through one view),
// a layer's pieces go into one slab where a slab can hold them; a layer that would not fit the
// rest of the current slab starts the next. Each slab is sized to what it holds, so keeping layers
// together costs no tail, and the last slab is no bigger than its rest of the model.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lantern::model {

struct WeightPiece {
    uint64_t bytes = 0;
    int32_t layer = -1;  // the layer whose weights it holds; -1 = none (embeddings, output)
};

class WeightPlacement {
public:
    struct Spot {
        uint32_t slab = 0;
        uint64_t offset = 0;
    };

    WeightPlacement() = default;
    // Throws Error(ModelTooLarge) for a piece past `max_allocation` (0 = no limit).
    WeightPlacement(std::vector<WeightPiece> pieces, uint64_t slab_bytes, uint64_t max_allocation,
                    uint64_t align, bool keep_layers);

    size_t pieces() const { return pieces_.size(); }
    const WeightPiece& piece(size_t i) const { return pieces_[i]; }
    const Spot& spot(size_t i) const { return spots_[i]; }
    const std::vector<uint64_t>& slab_sizes() const { return slab_sizes_; }
    uint64_t slab_bytes() const;   // what the slabs take: the weights' device memory
    uint64_t piece_bytes() const;  // what the pieces hold (without alignment padding)
    // Layers whose pieces lie in more than one slab (only without keep_layers, or a layer larger
    // than a slab).
    uint32_t split_layers() const;

private:
    std::vector<WeightPiece> pieces_;
    std::vector<Spot> spots_;
    std::vector<uint64_t> slab_sizes_;
};

}  // namespace lantern::model
