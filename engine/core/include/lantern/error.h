// lantern/error.h — the one error type the engine throws.
//
// Every failure a user can cause or meet (a bad file, an unsupported model, a device that is too
// small or was lost, a full context) is reported as lantern::Error with a code the app can branch
// on and a message a person can read. Nothing else escapes the engine's public API.
#pragma once
#include <stdexcept>
#include <string>

namespace lantern {

enum class ErrorCode {
    InvalidModelFile,         // malformed or truncated GGUF: message names the field and offset
    UnsupportedArchitecture,  // general.architecture is not one we run
    UnsupportedTensorType,    // a tensor's ggml type has no kernel yet
    UnsupportedTokenizer,     // tokenizer.ggml.model is not sentencepiece-style
    ModelTooLarge,            // weights or KV do not fit the device's memory / limits
    OutOfDeviceMemory,        // an allocation failed at run time
    DeviceLost,               // VK_ERROR_DEVICE_LOST: the engine must be recreated
    NoVulkanDevice,           // no usable Vulkan device (or the selector matched none)
    ContextFull,              // a sequence reached the context length or the KV pool is full
    InvalidArgument,          // caller passed something out of range
    Io,                       // file could not be opened / read / written
    Internal,                 // a bug: an invariant did not hold
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ErrorCode code() const { return code_; }

private:
    ErrorCode code_;
};

}  // namespace lantern
