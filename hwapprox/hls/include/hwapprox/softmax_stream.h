// hwapprox/softmax_stream.h -- io_stream pieces shared by the softmax units.
//
// One row of CONFIG_T::n_in elements per call on hls::stream, one element per
// cycle, bit-exact with the array units. Mask sources: no_mask_stream (no bits)
// or an hls::stream<bool> with one bit per element (true = masked out).
// softmax_buffered_stream buffers the row, runs a unit's array datapath
// (OP::row) on it and streams the row out (hls4ml, Shiftmax, Softermax);
// latency per row ~ 2·n_in + the array unit's. softmax_stream_of<OP> is the
// stream dispatch per op tag: each unit's header specialises it.
#ifndef HWAPPROX_SOFTMAX_STREAM_H
#define HWAPPROX_SOFTMAX_STREAM_H

#include "hls_stream.h"
#include "softmax_common.h"

namespace hwapprox {

// ---- io_stream -------------------------------------------------------------------------
// Mask sources of the stream units: no bits, or one bool per element from a stream.
struct no_mask_stream {
    bool read() { return false; }
};

// hls4ml, shiftmax and softermax: the row buffered, the array unit, the row streamed out.
template <class OP, class data_T, class res_T, typename C, class MS>
void softmax_buffered_stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
    typename C::in_t x[C::n_in];
    bool b[C::n_in];
    res_T y[C::n_in];
    #pragma HLS ARRAY_PARTITION variable = x complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = y complete
load:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        x[i] = data.read();
        b[i] = mask.read();
    }
    const mask_bits m = {b};
    OP::template row<typename C::in_t, res_T, C>(x, m, y);
store:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        res.write(y[i]);
    }
}

// Stream dispatch per op tag.
template <class OP>
struct softmax_stream_of;

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_STREAM_H
