#include "lantern/error.h"

namespace lantern {

const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::InvalidModelFile:
            return "invalid model file";
        case ErrorCode::UnsupportedArchitecture:
            return "unsupported architecture";
        case ErrorCode::UnsupportedTensorType:
            return "unsupported tensor type";
        case ErrorCode::UnsupportedTokenizer:
            return "unsupported tokenizer";
        case ErrorCode::ModelTooLarge:
            return "model too large for the device";
        case ErrorCode::OutOfDeviceMemory:
            return "out of device memory";
        case ErrorCode::DeviceLost:
            return "device lost";
        case ErrorCode::NoVulkanDevice:
            return "no Vulkan device";
        case ErrorCode::ContextFull:
            return "context full";
        case ErrorCode::InvalidArgument:
            return "invalid argument";
        case ErrorCode::Io:
            return "I/O error";
        case ErrorCode::Internal:
            return "internal error";
    }
    return "unknown error";
}

}  // namespace lantern
