//! plotters' bitmap backend with text rasterised here from the embedded font's outlines, at
//! the same place as [`super::svg_text`] puts it (plotters' own bitmap text drops side
//! bearings and the dots of i and j at small sizes).

use super::svg_text::{anchor_offset, embedded_font};
use ab_glyph::{Font, GlyphId, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind};

/// An RGB bitmap drawn into a buffer.
pub struct OutlinedBitmap<'a> {
    inner: BitMapBackend<'a>,
}

impl<'a> OutlinedBitmap<'a> {
    /// A bitmap of `size` pixels in `buf` (3 bytes per pixel).
    pub fn new(buf: &'a mut [u8], size: (u32, u32)) -> Self {
        OutlinedBitmap { inner: BitMapBackend::with_buffer(buf, size) }
    }
}

type Err = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

impl DrawingBackend for OutlinedBitmap<'_> {
    type ErrorType = Err;

    delegate_to_inner!();
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Err>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (dx, dy) = anchor_offset(text, style).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let font = embedded_font();
        let size = style.size() as f32;
        let scaled = font.as_scaled(PxScale::from(size));
        let trans = style.transform();
        let (w, h) = self.get_size();
        // Baseline at half the size below the layout box's top, as in the SVG.
        let baseline = dy as f32 + size / 2.0;
        let mut pen = dx as f32;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += scaled.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(PxScale::from(size), point(pen, baseline));
            pen += scaled.h_advance(id);
            let Some(outlined) = font.outline_glyph(glyph) else { continue };
            let min = outlined.px_bounds().min;
            let mut pixels = Vec::new();
            outlined.draw(|x, y, cov| pixels.push((x as i32 + min.x as i32, y as i32 + min.y as i32, cov)));
            for (lx, ly, cov) in pixels {
                if cov <= 0.0 {
                    continue;
                }
                let (rx, ry) = trans.transform(lx, ly);
                let (x, y) = (pos.0 + rx, pos.1 + ry);
                if x >= 0 && y >= 0 && x < w as i32 && y < h as i32 {
                    let alpha = color.alpha * f64::from(cov.min(1.0));
                    self.inner.draw_pixel((x, y), BackendColor { alpha, rgb: color.rgb })?;
                }
            }
        }
        Ok(())
    }
}
