// Which pixels each view of an image sees: the one table of chroma and DCT scaling per view.
#include "cvtrain/data/image_views.h"

namespace cvtrain {

ViewDecode view_decode(ImageView view) {
  switch (view) {
    case ImageView::classification_crop:
      return {JpegChroma::replicated, DctScaling::covering_crop};
    case ImageView::classification_center:
      return {JpegChroma::smooth, DctScaling::halving};
    case ImageView::exact:
      break;
  }
  return {JpegChroma::smooth, DctScaling::none};
}

JpegScale view_jpeg_scale(DctScaling scaling, ImageSize full, ImageSize region, ImageSize out) {
  switch (scaling) {
    case DctScaling::covering_crop:
      return jpeg_scale_covering(full, region, out);
    case DctScaling::halving:
      return jpeg_scale_halving(full, out);
    case DctScaling::none:
      break;
  }
  return {};
}

Image decode_view(const std::vector<uint8_t>& bytes, const std::string& name, ImageView view) {
  return decode_image(bytes, name, JpegScale{}, view_decode(view).chroma);
}

}  // namespace cvtrain
