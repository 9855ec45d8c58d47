# cmake -DSPV=in.spv -DOUT=out.cpp -DNAME=name -P EmbedSpirv.cmake
# Writes the SPIR-V words as a C++ array (SPIR-V is a stream of little-endian 32-bit words).
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0 OR n EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a whole number of 32-bit words")
endif()
math(EXPR words "${n} / 8")
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," body "${hex}")
string(REGEX REPLACE "(([^,]*,){8})" "\\1\n" body "${body}")
file(WRITE ${OUT} "// Generated from ${NAME}.spv. Do not edit.\n#include <cstddef>\n#include <cstdint>\n"
  "extern const uint32_t lantern_spv_${NAME}[] = {\n${body}\n};\n"
  "extern const size_t lantern_spv_${NAME}_words = ${words};\n")
