# Project-wide warning set: applied to our own targets only (lantern_warnings), never to Qt's
# generated code through global flags.
add_library(lantern_warnings INTERFACE)
target_compile_options(lantern_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local
  -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual -Wformat=2
  # Vulkan structs are written {VK_STRUCTURE_TYPE_...} on purpose: the rest is zero-initialised.
  -Wno-missing-field-initializers)
if(LANTERN_WERROR)
  target_compile_options(lantern_warnings INTERFACE -Werror)
endif()
