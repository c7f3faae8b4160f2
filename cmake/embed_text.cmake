# Embed a text file in the library as a byte array (the ranking models,
# CMakeLists.txt spf_embed_text):
#   cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed_text.cmake
# defines `const unsigned char NAME[]` (the bytes and a closing NUL) and
# `const size_t NAME_size` (the bytes without it). Bytes, not a string
# literal: no escaping, and no limit on a literal's length.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by cmake/embed_text.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {${bytes}0};\n"
  "const size_t ${NAME}_size = ${size};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
