# Hardening builds (.ci/sanitize.sh, .ci/fuzz.sh), both for clang:
#   -DATTNCONV_SANITIZE=ON  every target with AddressSanitizer + UndefinedBehaviorSanitizer
#   -DATTNCONV_FUZZ=ON      coverage for libFuzzer and the target attnconv_fuzz_loader
option(ATTNCONV_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ATTNCONV_FUZZ "Build the libFuzzer target attnconv_fuzz_loader (needs clang)" OFF)
if(ATTNCONV_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(ATTNCONV_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
