// libjpeg's error reporting as cvtrain uses it: errors longjmp back to the caller's setjmp (whose
// frame must hold no C++ objects), warnings that mean the data ended early are noted. Internal to
// data/'s libjpeg users (image_decode.cpp, jpeg_coding.cpp).
#pragma once

#include <csetjmp>
#include <cstdio>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace cvtrain::libjpeg {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool truncated;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] inline void jump_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (stray bytes, odd markers between segments) still give a full image, as PIL accepts
// them; data that ends early leaves grey rows, which cvtrain treats as corrupt: the file ends
// (JWRN_JPEG_EOF, PIL's "image file is truncated"), or a marker such as EOI stands where rows of
// entropy-coded data should (JWRN_HIT_MARKER: a header that claims more rows than the scan holds).
inline void note_warning(j_common_ptr cinfo, int level) {
  const int code = cinfo->err->msg_code;
  if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) reinterpret_cast<ErrorManager*>(cinfo->err)->truncated = true;
}

// Points `cinfo`'s error handling at `err`, fresh.
inline jpeg_error_mgr* attach(ErrorManager& err) {
  jpeg_error_mgr* pub = jpeg_std_error(&err.pub);
  err.pub.error_exit = jump_on_error;
  err.pub.emit_message = note_warning;
  err.truncated = false;
  err.message[0] = '\0';
  return pub;
}

}  // namespace cvtrain::libjpeg
