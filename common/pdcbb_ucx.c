/* pdcbb_ucx.c - UCX context/worker creation and status conversion (pdcbb_ucx.h). */
#include "pdcbb_ucx.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pdcbb_proto.h"

pdcbb_err_t pdcbb_err_from_ucs(ucs_status_t st)
{
    switch (st) {
    case UCS_OK: return PDCBB_OK;
    case UCS_ERR_NO_MEMORY: return PDCBB_ERR_NOMEM;
    case UCS_ERR_INVALID_PARAM: return PDCBB_ERR_INVAL;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT: return PDCBB_ERR_TIMEOUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_CANCELED: return PDCBB_ERR_UNREACHABLE;
    case UCS_ERR_MESSAGE_TRUNCATED: return PDCBB_ERR_TRUNCATED;
    case UCS_ERR_EXCEEDS_LIMIT: return PDCBB_ERR_TOO_BIG;
    default: return PDCBB_ERR_TRANSPORT;
    }
}

pdcbb_err_t pdcbb_ucx_open(pdcbb_ucx_t *u, const char *tls, const char *net_devices, char *err,
                           size_t errlen)
{
    ucp_config_t *config = NULL;
    ucs_status_t st;
    const char *what = "ucp_config_read";

    memset(u, 0, sizeof(*u));
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK)
        goto fail;
    what = "TLS";
    if (tls && *tls && (st = ucp_config_modify(config, "TLS", tls)) != UCS_OK)
        goto fail;
    what = "NET_DEVICES";
    if (net_devices && *net_devices &&
        (st = ucp_config_modify(config, "NET_DEVICES", net_devices)) != UCS_OK)
        goto fail;
    /* Single-copy large messages over cma while keeping dead-peer detection (docs/INTERNALS.md, Transport). */
    what = "MEMORY_INVALIDATE";
    if ((st = ucp_config_modify(config, "MEMORY_INVALIDATE", "y")) != UCS_OK)
        goto fail;
    what = "RNDV_SCHEME";
    if ((st = ucp_config_modify(config, "RNDV_SCHEME", "get_zcopy")) != UCS_OK)
        goto fail;

    ucp_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.name = "pdcbb";
    what = "ucp_init";
    if ((st = ucp_init(&params, config, &u->context)) != UCS_OK)
        goto fail;
    ucp_config_release(config);
    config = NULL;

    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    what = "ucp_worker_create";
    if ((st = ucp_worker_create(u->context, &wp, &u->worker)) != UCS_OK)
        goto fail;
    return PDCBB_OK;

fail:
    if (err)
        snprintf(err, errlen, "UCX %s failed: %s (transports '%s', devices '%s')", what,
                 ucs_status_string(st), tls && *tls ? tls : "default",
                 net_devices && *net_devices ? net_devices : "all");
    if (config)
        ucp_config_release(config);
    pdcbb_ucx_close(u);
    return pdcbb_err_from_ucs(st) == PDCBB_ERR_INVAL ? PDCBB_ERR_CONFIG : PDCBB_ERR_TRANSPORT;
}

void pdcbb_ucx_close(pdcbb_ucx_t *u)
{
    if (u->worker)
        ucp_worker_destroy(u->worker);
    if (u->context)
        ucp_cleanup(u->context);
    u->worker = NULL;
    u->context = NULL;
}

pdcbb_err_t pdcbb_sockaddr_make(const char *ip, uint16_t port, struct sockaddr_storage *ss,
                                socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        *len = sizeof(*in4);
        return PDCBB_OK;
    }
    if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *len = sizeof(*in6);
        return PDCBB_OK;
    }
    return PDCBB_ERR_INVAL;
}

ucs_status_t pdcbb_ucx_wait(ucp_worker_h worker, void *request)
{
    if (request == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(request))
        return UCS_PTR_STATUS(request);
    ucs_status_t st;
    while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucp_request_free(request);
    return st;
}

pdcbb_err_t pdcbb_node_address(char *out, size_t len)
{
    char host[256];
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (gethostname(host, sizeof(host)) == 0 && getaddrinfo(host, NULL, &hints, &res) == 0) {
        for (struct addrinfo *a = res; a; a = a->ai_next) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)a->ai_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
                continue;
            inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)len);
            freeaddrinfo(res);
            return PDCBB_OK;
        }
        freeaddrinfo(res);
    }
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
                !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                continue;
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                      (socklen_t)len);
            freeifaddrs(ifs);
            return PDCBB_OK;
        }
        freeifaddrs(ifs);
    }
    snprintf(out, len, "127.0.0.1");
    return PDCBB_OK;
}

pdcbb_err_t pdcbb_ucx_set_am_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb,
                                     void *arg, char *err, size_t errlen)
{
    ucp_am_handler_param_t hp;
    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = id;
    hp.cb = cb;
    hp.arg = arg;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &hp);
    if (st != UCS_OK) {
        if (err)
            snprintf(err, errlen, "UCX cannot register the handler of message %u: %s", id,
                     ucs_status_string(st));
        return PDCBB_ERR_TRANSPORT;
    }
    return PDCBB_OK;
}

static double ucx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pdcbb_ucx_ep_close(ucp_worker_h worker, ucp_ep_h ep, int force, double timeout)
{
    if (ep == NULL)
        return;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    void *req = ucp_ep_close_nbx(ep, &prm);
    if (req == NULL || UCS_PTR_IS_ERR(req))
        return;
    double deadline = ucx_now() + timeout;
    while (ucp_request_check_status(req) == UCS_INPROGRESS && ucx_now() < deadline)
        ucp_worker_progress(worker);
    if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_request_cancel(worker, req);
        while (ucp_request_check_status(req) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
    }
    ucp_request_free(req);
}

ucs_status_t pdcbb_ucx_connect(ucp_worker_h worker, const struct sockaddr_storage *ss,
                               socklen_t sslen, ucp_err_handler_cb_t cb, void *arg,
                               ucp_ep_h *ep)
{
    ucp_ep_params_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                     UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    prm.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    prm.sockaddr.addr = (const struct sockaddr *)ss;
    prm.sockaddr.addrlen = sslen;
    prm.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    prm.err_handler.cb = cb;
    prm.err_handler.arg = arg;
    ucs_status_t st = ucp_ep_create(worker, &prm, ep);
    if (st != UCS_OK)
        *ep = NULL;
    return st;
}

void *pdcbb_ucx_send_msg(ucp_ep_h ep, const void *msg, size_t len, const void *bulk,
                         size_t bulk_len, uint32_t flags, ucp_send_nbx_callback_t cb,
                         void *user_data)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.send = cb;
    prm.user_data = user_data;
    prm.flags = flags;
    return bulk ? ucp_am_send_nbx(ep, PDCBB_AM_ID_DATA, msg, len, bulk, bulk_len, &prm)
                : ucp_am_send_nbx(ep, PDCBB_AM_ID_MSG, NULL, 0, msg, len, &prm);
}

void *pdcbb_ucx_recv_data(ucp_worker_h worker, void *data, void *buf, size_t length,
                          ucp_am_recv_data_nbx_callback_t cb, void *user_data)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv_am = cb;
    prm.user_data = user_data;
    return ucp_am_recv_data_nbx(worker, data, buf, length, &prm);
}
