/* common/gns.c - see gns.h. */
#include "gns.h"

#include <math.h>
#include <string.h>

int gns_sample(double local_sum, double total_sqr, double batch, int n, gns_sample_t *out)
{
    if (n < 2 || !(batch > n - 1) || !isfinite(local_sum) || !isfinite(total_sqr) || !isfinite(batch)) return -1;
    double local = local_sum / batch;
    double trace = batch * (local - total_sqr) / (n - 1);
    out->trace = trace;
    out->g2 = total_sqr - trace / batch;
    return 0;
}

void gns_reset(gns_t *e) { memset(e, 0, sizeof *e); }

void gns_update(gns_t *e, const gns_sample_t *s, double batch_ratio)
{
    if (!(batch_ratio > 0) || !isfinite(s->g2) || !isfinite(s->trace)) return;
    double keep = pow(GNS_DECAY, batch_ratio);
    e->g2 = keep * e->g2 + (1 - keep) * s->g2;
    e->trace = keep * e->trace + (1 - keep) * s->trace;
    e->weight = keep * e->weight + (1 - keep);
    e->samples++;
}

double gns_g2(const gns_t *e) { return e->weight > 0 ? e->g2 / e->weight : 0; }

double gns_trace(const gns_t *e) { return e->weight > 0 ? e->trace / e->weight : 0; }

double gns_noise_scale(const gns_t *e)
{
    if (e->samples < GNS_MIN_SAMPLES) return NAN;
    double tr = gns_trace(e), g2 = gns_g2(e);
    if (!(tr > 0)) return NAN;
    if (!(g2 > 0) || tr / g2 > GNS_PHI_MAX) return GNS_PHI_MAX;
    return tr / g2;
}

int gns_beyond(double phi) { return phi >= GNS_PHI_MAX; }

double gns_reported(double phi) { return gns_beyond(phi) ? NAN : phi; }

double gns_efficiency(double phi, double b0, double b)
{
    if (!(b0 > 0) || !(b > 0)) return NAN;
    if (isnan(phi)) return b <= b0 ? 1.0 : b0 / b;
    if (phi < 0) phi = 0;
    return (phi + b0) / (phi + b);
}

double gns_gain(double phi, double b0, double b)
{
    double r = b / b0 * gns_efficiency(phi, b0, b);
    if (!(r >= 1)) return 1.0; /* B <= B0, or NAN */
    return r > b / b0 ? b / b0 : r;
}
