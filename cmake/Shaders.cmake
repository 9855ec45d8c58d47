# Shader build: every variant listed in shaders/manifest.txt is compiled by glslangValidator
# (Vulkan 1.2 SPIR-V, -D defines from the manifest), checked by spirv-val, and turned into a
# uint32_t array compiled into the engine. Nothing is read from disk at run time.
find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)
find_program(SPIRV_VAL spirv-val REQUIRED)

# lantern_compile_shaders(TARGET <lib> MANIFEST <file> SOURCE_DIR <dir>)
# Adds the generated sources to <lib> and generates lantern_shaders.h (enum ShaderId + lookup).
function(lantern_compile_shaders)
  cmake_parse_arguments(ARG "" "TARGET;MANIFEST;SOURCE_DIR" "" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  file(MAKE_DIRECTORY ${out_dir}/spv ${out_dir}/src ${out_dir}/include/lantern_shaders)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ARG_MANIFEST})
  file(STRINGS ${ARG_MANIFEST} lines)
  set(enum_body "")
  set(table_body "")
  set(decls "")
  set(sources "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
    list(GET fields 0 name)
    list(GET fields 1 src)
    list(LENGTH fields nfields)
    set(defines "")
    if(nfields GREATER 2)
      list(SUBLIST fields 2 -1 defines)
    endif()
    set(dflags "")
    foreach(d IN LISTS defines)
      list(APPEND dflags "-D${d}")
    endforeach()
    set(spv ${out_dir}/spv/${name}.spv)
    set(cpp ${out_dir}/src/${name}.cpp)
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.2 -I${ARG_SOURCE_DIR} ${dflags}
              --depfile ${spv}.d -o ${spv} ${ARG_SOURCE_DIR}/${src}
      COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv}
      DEPENDS ${ARG_SOURCE_DIR}/${src} ${ARG_MANIFEST}
      DEPFILE ${spv}.d
      COMMENT "glslang: ${src} -> ${name}.spv ${dflags}"
      VERBATIM)
    add_custom_command(
      OUTPUT ${cpp}
      COMMAND ${CMAKE_COMMAND} -DSPV=${spv} -DOUT=${cpp} -DNAME=${name}
              -P ${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake
      DEPENDS ${spv} ${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake
      COMMENT "embed ${name}.spv"
      VERBATIM)
    list(APPEND sources ${cpp})
    string(APPEND enum_body "    ${name},\n")
    string(APPEND decls "extern const uint32_t lantern_spv_${name}[];\nextern const size_t lantern_spv_${name}_words;\n")
    string(APPEND table_body "    {\"${name}\", lantern_spv_${name}, lantern_spv_${name}_words},\n")
  endforeach()
  file(CONFIGURE OUTPUT ${out_dir}/include/lantern_shaders/shaders.h CONTENT
"// Generated from shaders/manifest.txt by cmake/Shaders.cmake. Do not edit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
namespace lantern::shaders {
enum class ShaderId : uint32_t {
${enum_body}    count
};
struct EmbeddedShader {
    const char* name;
    const uint32_t* code;
    size_t words;
};
const EmbeddedShader& embedded(ShaderId id);
std::span<const EmbeddedShader> all();
}  // namespace lantern::shaders
")
  file(CONFIGURE OUTPUT ${out_dir}/src/shader_table.cpp CONTENT
"// Generated from shaders/manifest.txt by cmake/Shaders.cmake. Do not edit.
#include \"lantern_shaders/shaders.h\"
${decls}
namespace lantern::shaders {
namespace {
const EmbeddedShader kTable[] = {
${table_body}};
}
const EmbeddedShader& embedded(ShaderId id) { return kTable[static_cast<uint32_t>(id)]; }
std::span<const EmbeddedShader> all() { return kTable; }
}  // namespace lantern::shaders
")
  target_sources(${ARG_TARGET} PRIVATE ${sources} ${out_dir}/src/shader_table.cpp)
  target_include_directories(${ARG_TARGET} PUBLIC ${out_dir}/include)
endfunction()

# Attaches the manifest's shaders to a target (called from engine/CMakeLists.txt).
# The target's own sources may include shaders/gpu_tiles.h, the tile shapes that host code shares
# with the shaders (preprocessor definitions only).
function(lantern_add_shaders_to target)
  lantern_compile_shaders(TARGET ${target} MANIFEST ${LANTERN_SHADER_MANIFEST} SOURCE_DIR ${LANTERN_SHADER_DIR})
  target_include_directories(${target} PRIVATE ${LANTERN_SHADER_DIR})
endfunction()
